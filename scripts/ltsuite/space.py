"""How much disk a run's cells will write, estimated before the run starts.

  python3 -m ltsuite.space CELL_ENV:COUNT...   prints the bytes the cells will write

Each CELL_ENV is a cell's settings (matrix_cell_values' KEY=VALUE lines), COUNT how many
times it runs (its repetitions still to run). The runner (scripts/lib/space.sh) compares the sum
with the free space of the results directory and refuses to start a run that would not fit.

k6's per-request samples dominate a cell's files, so a cell's bytes are a fixed part plus a
part per second of load plus a part per request, with the requests an upper bound from the
users, the load time and the endpoint's delay. The figures (measured here, k6 1.x):
  - per request: 168 bytes of k6-samples.json.gz (the tiny-spike fixture under
    tests/python/fixtures: 12,639 bytes for 75 requests) and 48 of tomcat-access.log (the
    time-parts fixtures: 481 bytes for 10 lines), rounded up to 300 bytes;
  - per cell: about 35 KB of the other cell files (the fixtures: 27,782 to 34,972 bytes) and
    k6's web dashboard export, 165,304 bytes for a 3 s run: 250,000 bytes;
  - per second of load: the dashboard's 1 s periods and samples.tsv's rows: 2,000 bytes.
An estimate, not a promise: a cell that sends more than MAX_RPS requests a second, or a
script of one's own that writes files of its own, takes more.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from .cellfiles import read_cell_env
from .rules import duration_ms

BYTES_PER_REQUEST = 300
BYTES_PER_CELL = 250_000
BYTES_PER_SECOND = 2_000
#: Requests a second one cell is assumed to reach at most (k6 on one machine; an upper bound).
MAX_RPS = 20_000
#: Scenarios whose load time is the sum of their STAGES (k6.sh k6_planned_seconds).
STAGED = ("ramp", "waiting-room")


@dataclass(frozen=True)
class CellSpace:
    """One cell's estimate: its load time and requests, and the bytes they make."""

    load_s: float
    requests: int

    @property
    def bytes(self) -> int:
        """BYTES_PER_CELL + BYTES_PER_SECOND x load_s + BYTES_PER_REQUEST x requests."""
        return int(BYTES_PER_CELL + BYTES_PER_SECOND * self.load_s + BYTES_PER_REQUEST * self.requests)


def _number(env: dict[str, str], key: str, default: float) -> float:
    """A numeric knob (its first word), default when empty or not a number."""
    try:
        return float((env.get(key) or "").split()[0])
    except (IndexError, ValueError):
        return default


def load_seconds(env: dict[str, str]) -> float:
    """The scenario's load time plus its graceful stop, in seconds (as k6_planned_seconds)."""
    if env.get("SCENARIO") in STAGED:
        load_ms = sum(duration_ms(stage.rsplit(":", 1)[0]) or 0 for stage in (env.get("STAGES") or "").split(","))
    else:
        load_ms = duration_ms(env.get("DURATION") or "") or 0
    return (load_ms + (duration_ms(env.get("GRACEFUL_STOP") or "") or 0)) / 1000


def cell_space(env: dict[str, str]) -> CellSpace:
    """A cell's estimate: each user sends at most one request per DELAY_MS + THINK_TIME_MS
    (1 ms at least), and the cell at most MAX_RPS a second."""
    load_s = load_seconds(env)
    users = _number(env, "VUS", 1)
    pause_ms = max(_number(env, "DELAY_MS", 0) + _number(env, "THINK_TIME_MS", 0), 1)
    requests = min(users * load_s * 1000 / pause_ms, MAX_RPS * load_s)
    requests = max(requests, users * _number(env, "REQUESTS_PER_VU", 1))
    return CellSpace(load_s=load_s, requests=int(requests))


def estimate(cells: list[tuple[dict[str, str], int]]) -> int:
    """Bytes of every cell, each as many times as it runs."""
    return sum(cell_space(env).bytes * count for env, count in cells)


def main(argv: list[str]) -> int:
    """Print the estimate for CELL_ENV:COUNT arguments."""
    cells = []
    for arg in argv:
        path, _, count = arg.rpartition(":")
        env = read_cell_env(Path(path))
        if env is None:
            print(f"space: {path}: no such cell settings file", file=sys.stderr)
            return 2
        cells.append((env, int(count)))
    print(estimate(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
