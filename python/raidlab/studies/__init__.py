"""Published measurements and what raidlab makes of them: ATTO studies measured vs
simulated (``atto_studies``), the claims of articles checked (``claims``), candidate
arrays ranked for a workload (``advise``), and the reference data (``reference/``)."""
