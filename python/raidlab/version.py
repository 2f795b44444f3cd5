"""The package's version, a leaf: modules that print it (the report page's generator
line) import it from here rather than the package root, which would tie them into a
circle through the root's lazy imports of the API."""

from __future__ import annotations

# The same as pyproject.toml's [project] version.
__version__ = "0.1.0"
