"""The Python package's layers (docs/architecture.md): each subpackage imports only the
layers below it, so a behaviour's home is where the architecture says it is."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "raidlab"

# What each part of the package may import, besides itself and the shared basics
# (errors, units) and the native module. The CLI sits on top and may import anything.
BASICS = {"raidlab.errors", "raidlab.units", "raidlab._native"}
ALLOWED: dict[str, set[str]] = {
    "raidlab.scenario": set(),
    "raidlab.engine": set(),
    "raidlab.frontends": {"raidlab.scenario"},
    "raidlab.reliability": {"raidlab.scenario"},
    "raidlab.studies": {"raidlab.scenario", "raidlab.frontends", "raidlab.reliability"},
    "raidlab.report": {
        "raidlab.scenario",
        "raidlab.frontends",
        "raidlab.studies",
        "raidlab.reliability",
    },
    "raidlab.api": {
        "raidlab.scenario",
        "raidlab.frontends",
        "raidlab.studies",
        "raidlab.report",
        "raidlab.reliability",
    },
}


def _part(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "raidlab":
                found.update(f"raidlab.{alias.name}" for alias in node.names)
            elif node.module.startswith("raidlab."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("raidlab."))
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _module_name(p))
def test_a_module_imports_only_the_layers_below_it(path: Path) -> None:
    module = _module_name(path)
    part = _part(module)
    if part not in ALLOWED:
        return  # the CLI, the package root and the basics
    allowed = ALLOWED[part] | BASICS | {part}
    wrong = sorted(name for name in _imports(path) if _part(name) not in allowed)
    assert not wrong, f"{module} imports {wrong}; {part} may import {sorted(allowed)}"


def test_the_layer_table_names_every_subpackage() -> None:
    subpackages = {
        f"raidlab.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()
    }
    assert subpackages == set(ALLOWED) - {"raidlab.api"} | {"raidlab.cli"}
