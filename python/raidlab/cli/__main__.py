"""`python -m raidlab.cli`: the same as the `raidlab` console script."""

from raidlab.cli import main

main()
