"""`python -m raidlab`: the `raidlab` command line, as `python -m raidlab.cli`."""

from raidlab.cli import main

main()
