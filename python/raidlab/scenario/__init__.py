"""The scenario: what the user asked for, resolved into the plain data the native
simulator takes (docs/scenario.md), and running it.

- ``array``: array requests, presets and TOML files into the scenario's ``array``;
- ``tuning``: controller and SSD knobs on top of the presets;
- ``workloads``: fio-style workload requests into the scenario's ``workload``;
- ``presets``: the drive, controller and host presets (TOML with sources);
- ``native``: the bridge to ``raidlab._native``;
- ``executor``: many scenarios on worker processes, with a progress bar.
"""
