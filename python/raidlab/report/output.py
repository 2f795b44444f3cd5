"""Where results go: the consoles, JSON documents and DataFrame records.

Tables, CSV and JSON are rendered in ``raidlab.report``; commands only choose which.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

import pandas as pd
from rich.console import Console

stdout = Console(soft_wrap=True)


stderr = Console(stderr=True, soft_wrap=True)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = json.loads(frame.to_json(orient="records"))
    return records


def print_json(document: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(document, indent=2) + "\n")
