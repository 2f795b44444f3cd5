"""Published measurements and what raidlab makes of them: ATTO studies measured vs
simulated (``atto_studies``), the claims of articles checked (``claims``), candidate
arrays ranked for a workload (``advise``), and the reference data (``reference/``)."""

# Measured host I/Os per claim run (the CLI's --ios-max). Here, not in `claims`, so the
# command line's help reads it without loading the claim studies.
CLAIMS_IOS_DEFAULT = 20_000

# Every study `reproduce` knows, for the command line's help without loading them
# (tests/test_studies.py checks it against the studies themselves).
STUDY_NAMES = (
    "ssd-raid0-atto",
    "hdd-raid0-atto",
    "ssd-raid-tuning",
    "nvme-raid0",
    "raidix-cache",
)
