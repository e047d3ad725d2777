"""The test suite in one process against `make test`'s two pytest-xdist workers, in one run.

Runs ``pytest PATHS`` (default: the configured ``testpaths``) under ``CI=true`` with
``-n 0`` and with the Makefile's ``-n 2 --dist loadfile``, alternating which goes first over
``--rounds`` rounds, and prints each wall time and pytest's last line. RATIO: the median
wall time in one process over the median with two workers (higher is better). A failing run
stops the benchmark: its time would mean nothing.

    python benchmarks/bench_suite_workers.py [--rounds 1] [PATHS ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ratio import print_ratio

REPO = Path(__file__).resolve().parents[1]
WAYS = {"one process": ["-n", "0"], "two workers": ["-n", "2", "--dist", "loadfile"]}
"""The options of each way; the workers' are the Makefile's ``test`` target's."""


def timed(options: list[str], paths: list[str]) -> tuple[float, str]:
    """Wall seconds of one pytest run and its summary line; SystemExit when it fails."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, *paths]
    started = time.perf_counter()
    done = subprocess.run(
        command,
        cwd=REPO,
        env={**os.environ, "CI": "true"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seconds = time.perf_counter() - started
    summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    if done.returncode:
        raise SystemExit(f"pytest {' '.join(options)} failed after {seconds:.0f} s: {summary}")
    return seconds, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="runs of each way (alternated)")
    parser.add_argument("paths", nargs="*", help="test paths (default: the suite)")
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {way: [] for way in WAYS}
    for round_ in range(args.rounds):
        order = list(WAYS) if round_ % 2 == 0 else list(reversed(WAYS))
        for way in order:
            took, summary = timed(WAYS[way], args.paths)
            seconds[way].append(took)
            print(f"round {round_ + 1}, {way}: {took:.1f} s  ({summary})", flush=True)
    one, two = (statistics.median(seconds[way]) for way in WAYS)
    print_ratio(
        "suite_one_process_vs_two_workers",
        one / two,
        f"median wall {one:.0f} s / {two:.0f} s over {args.rounds} round(s); higher is better",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
