"""Workload front ends in their users' languages: ATTO sweeps (``atto``), fio job
files and fio's JSON/text output (``fio``, ``fio_report``), CrystalDiskMark, IOMeter
and SNIA PTS (``suites``)."""
