"""Readers: one per kind of input ``raidlab report`` accepts, each recognising its
document by shape and turning it into a ``Report``.

Kinds (the ``--format json`` output of each command):

===========  ====================================================================
study        ``raidlab reproduce STUDY`` of an ATTO study (rows measured vs simulated)
claims       ``raidlab reproduce STUDY`` of a claim study (PASS/FAIL per claim)
cache-study  ``raidlab reproduce raidix-cache`` (gains stated vs simulated, SSD
             write hits per policy)
advise       ``raidlab advise`` (candidate arrays, best first)
run          ``raidlab run`` (one fio-style run with its explain and scenario)
replay       ``raidlab replay`` (a trace replayed, results and scenario)
atto         ``raidlab atto`` (a simulated ATTO sweep with an explain per point)
sweep        ``raidlab sweep`` (its PREFIX.csv or PREFIX.parquet too: one row per point)
===========  ====================================================================

Adding a kind takes a ``Reader`` in ``readers()`` and, for a file that is not JSON, a
loader in ``loaders()`` keyed by its suffix that returns the document the reader
matches (the sweep's CSV becomes the ``{"records": [...]}`` its JSON is).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raidlab.errors import RaidlabError
from raidlab.report.html import cache_study, kinds, planning, suites, sweep
from raidlab.report.html.document import INPUT_BYTES_MAX, INPUT_LABEL
from raidlab.report.html.model import Report


@dataclass(frozen=True)
class Reader:
    kind: str
    describes: str
    matches: Callable[[Mapping[str, Any]], bool]
    read: Callable[[Mapping[str, Any]], Report]


def _records(document: Mapping[str, Any]) -> list[Any]:
    records = document.get("records")
    return records if isinstance(records, list) else []


def _first(document: Mapping[str, Any]) -> Mapping[str, Any]:
    records = _records(document)
    return records[0] if records and isinstance(records[0], Mapping) else {}


def _is_study(document: Mapping[str, Any]) -> bool:
    return "study" in document and "summary" in document and "coverage" not in document


def _is_claims(document: Mapping[str, Any]) -> bool:
    return "study" in document and "coverage" in document


def _is_advise(document: Mapping[str, Any]) -> bool:
    return {"rank", "level", "write_cache"} <= set(_first(document))


def _is_run(document: Mapping[str, Any]) -> bool:
    return (
        "scenario" in document
        and isinstance(document.get("explain"), Mapping | None)
        and ("results" not in document)
        and "records" in document
    )


def _is_replay(document: Mapping[str, Any]) -> bool:
    return "scenario" in document and isinstance(document.get("results"), Mapping)


def _is_atto(document: Mapping[str, Any]) -> bool:
    return "array" in document and isinstance(document.get("explain"), list)


def _is_fio(document: Mapping[str, Any]) -> bool:
    return "fio version" in document and isinstance(document.get("jobs"), list)


def _is_cdm(document: Mapping[str, Any]) -> bool:
    return {"test", "op", "mbps"} <= set(_first(document)) and "spec" not in document


def _is_iometer(document: Mapping[str, Any]) -> bool:
    return isinstance(document.get("spec"), Mapping) and "records" in document


def _is_pts(document: Mapping[str, Any]) -> bool:
    summary = document.get("summary")
    return isinstance(summary, Mapping) and "tracking" in summary and "table" in document


def _is_life(document: Mapping[str, Any]) -> bool:
    return "drive_preset" in document and isinstance(document.get("drives"), list)


def _is_risk(document: Mapping[str, Any]) -> bool:
    return "mttdl_hours" in document and "p_loss" in document


def readers() -> list[Reader]:
    """Every reader, in the order they are tried (claims before studies: both have
    ``study``)."""
    return [
        Reader("sweep", "raidlab sweep (or its .csv, .parquet)", sweep.is_sweep, sweep.read_sweep),
        Reader(
            "cache-study",
            "raidlab reproduce raidix-cache",
            cache_study.is_cache_study,
            cache_study.read_cache_study,
        ),
        Reader("claims", "raidlab reproduce (a claim study)", _is_claims, kinds.read_claims),
        Reader("study", "raidlab reproduce (an ATTO study)", _is_study, kinds.read_study),
        Reader("advise", "raidlab advise", _is_advise, kinds.read_advise),
        Reader("replay", "raidlab replay", _is_replay, kinds.read_replay),
        Reader("run", "raidlab run", _is_run, kinds.read_run),
        Reader("atto", "raidlab atto", _is_atto, kinds.read_atto),
        Reader("fio", "raidlab fio --output-format json", _is_fio, suites.read_fio),
        Reader("cdm", "raidlab cdm", _is_cdm, suites.read_cdm),
        Reader("iometer", "raidlab iometer", _is_iometer, suites.read_iometer),
        Reader("pts", "raidlab pts", _is_pts, suites.read_pts),
        Reader("life", "raidlab life", _is_life, planning.read_life),
        Reader("risk", "raidlab risk", _is_risk, planning.read_risk),
    ]


def read_document(document: Any) -> Report:
    """The report of ``document`` by the first reader whose shape it has."""
    if not isinstance(document, Mapping):
        raise RaidlabError(
            INPUT_LABEL, f"expected a JSON object, got a JSON {type(document).__name__}"
        )
    known_readers = readers()
    for reader in known_readers:
        if reader.matches(document):
            return reader.read(document)
    keys = ", ".join(sorted(map(str, document))[:12]) or "none"
    known = ", ".join(reader.describes for reader in known_readers)
    raise RaidlabError(
        INPUT_LABEL,
        f"not a document raidlab report knows (keys: {keys}); give the --format json "
        f"output of {known}",
    )


def load_json(path: str | Path) -> Any:
    """The JSON document at ``path`` (``-``: standard input)."""
    if str(path) == "-":
        text = sys.stdin.read(INPUT_BYTES_MAX + 1)
        name = "standard input"
    else:
        path = Path(path)
        if not path.is_file():
            what = "a directory" if path.is_dir() else "no such file"
            raise RaidlabError(INPUT_LABEL, f"{path}: {what}")
        if path.stat().st_size > INPUT_BYTES_MAX:
            raise RaidlabError(INPUT_LABEL, f"{path}: larger than {INPUT_BYTES_MAX >> 20} MiB")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise RaidlabError(INPUT_LABEL, f"{path}: cannot read it: {error}") from None
        name = str(path)
    if len(text) > INPUT_BYTES_MAX:
        raise RaidlabError(INPUT_LABEL, f"{name}: larger than {INPUT_BYTES_MAX >> 20} MiB")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise RaidlabError(
            INPUT_LABEL,
            f"{name} is not JSON ({error.msg} at line {error.lineno} column {error.colno}); "
            "give a command's --format json output",
        ) from None


def loaders() -> dict[str, Callable[[Path], Any]]:
    """Loaders of inputs that are not JSON, by file suffix (JSON is the default)."""
    return {".csv": sweep.load_csv, ".parquet": sweep.load_parquet}


def load_input(path: str | Path) -> Any:
    """The document at ``path`` (``-``: standard input, JSON)."""
    loader = loaders().get(Path(str(path)).suffix.lower())
    return loader(Path(path)) if loader is not None and str(path) != "-" else load_json(path)
