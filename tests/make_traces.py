"""Write the small in-tree block traces of tests/data/traces/ (deterministic).

    python tests/make_traces.py

small.msr.csv: 300 requests in the MSR Cambridge CSV format (Timestamp in 100 ns
Windows ticks, Hostname, DiskNumber, Type, Offset, Size, ResponseTime); a mix of 4 KiB
random reads, 64 KiB sequential writes and 8 KiB random writes, about 2,000 requests/s.
small.blkparse.txt: the same kind of stream as blkparse's default text output, with
Q events (the requests) among G/I/D/C events and a summary at the end, as blkparse
prints them.
"""

from __future__ import annotations

import random
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "traces"
REQUESTS = 300
TICK_ORIGIN = 128166372003061629  # a real MSR timestamp (2007-02-22)
SPAN_BYTES = 8 << 30


def requests() -> list[tuple[int, bool, int, int]]:
    """(time_ns, write, offset_bytes, size_bytes) in time order."""
    rng = random.Random(42)
    time_ns, seq_offset, out = 0, 1 << 30, []
    for _ in range(REQUESTS):
        time_ns += int(rng.expovariate(1 / 500_000))  # mean 0.5 ms between requests
        kind = rng.random()
        if kind < 0.6:
            size = 4096
            out.append((time_ns, False, rng.randrange(SPAN_BYTES // size) * size, size))
        elif kind < 0.85:
            size = 65536
            out.append((time_ns, True, seq_offset, size))
            seq_offset += size
        else:
            size = 8192
            out.append((time_ns, True, rng.randrange(SPAN_BYTES // size) * size, size))
    return out


def write_msr(path: Path) -> None:
    lines = ["Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"]
    for time_ns, write, offset, size in requests():
        ticks = TICK_ORIGIN + time_ns // 100
        lines.append(
            f"{ticks},usr,0,{'Write' if write else 'Read'},{offset},{size},{1000 + size // 64}"
        )
    path.write_text("\n".join(lines) + "\n")


def write_blkparse(path: Path) -> None:
    lines, seq = [], 0
    for time_ns, write, offset, size in requests():
        t = time_ns / 1e9
        rwbs = "W" if write else "R"
        sector, sectors = offset // 512, size // 512
        for action, dt in (("Q", 0), ("G", 800), ("I", 1500), ("D", 3000)):
            seq += 1
            lines.append(
                f"  8,0    1 {seq:>8} {t + dt / 1e9:14.9f}  4162  {action}  {rwbs:<3}"
                f"{sector} + {sectors} [fio]"
            )
        seq += 1
        lines.append(
            f"  8,0    1 {seq:>8} {t + 90e-6:14.9f}     0  C  {rwbs:<3}{sector} + {sectors} [0]"
        )
    lines += [
        "CPU1 (8,0):",
        f" Reads Queued:         {sum(1 for r in requests() if not r[1]):>6}",
        f" Writes Queued:        {sum(1 for r in requests() if r[1]):>6}",
        "Total (8,0):",
    ]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    write_msr(OUT / "small.msr.csv")
    write_blkparse(OUT / "small.blkparse.txt")
