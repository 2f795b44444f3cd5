"""The Python package's layers (docs/architecture.md): each subpackage imports only the
layers below it, so a behaviour's home is where the architecture says it is."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "raidlab"

# What each part of the package may import, besides itself and the shared basics
# (errors, units, the version, progress bars) and the native module. The CLI sits on top and may
# import anything.
BASICS = {
    "raidlab.errors",
    "raidlab.units",
    "raidlab.version",
    "raidlab.progress",
    "raidlab._native",
}
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


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "raidlab":
                found.update(f"raidlab.{alias.name}" for alias in node.names)
            elif node.module.startswith("raidlab."):
                # `from raidlab.report import plots` imports the module plots.
                found.update(
                    f"{node.module}.{alias.name}"
                    if _is_module(f"{node.module}.{alias.name}")
                    else node.module
                    for alias in node.names
                )
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
    subpackages = {f"raidlab.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert subpackages == set(ALLOWED) - {"raidlab.api"} | {"raidlab.cli"}


def _circle_from(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    """A chain of imports from ``start`` back to it, if there is one (depth first)."""
    path: list[str] = []
    done: set[str] = set()

    def visit(module: str) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return None
        path.append(module)
        for target in sorted(graph.get(module, ())):
            found = visit(target)
            if found:
                return found
        path.pop()
        done.add(module)
        return None

    return visit(start)


# No circles anywhere in the package: a module that imports another which (through a
# chain, function-level imports and package `__init__`s included) imports it back.
def test_no_modules_import_each_other_in_a_loop() -> None:
    modules = {_module_name(path): path for path in MODULES}
    graph = {
        module: {name for name in _imports(path) if name in modules and name != module}
        for module, path in modules.items()
    }
    for module in sorted(graph):
        circle = _circle_from(module, graph)
        assert circle is None, "import circle: " + " -> ".join(circle)
