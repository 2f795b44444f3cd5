"""Rendering: consoles, JSON and records (``output``), tables (``tables``), the explain
report (``explain``), study and claim reports (``studies``) and figures (``plots``)."""
