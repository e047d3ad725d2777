"""`make bench`: run every benchmark, then print one table of the ratios they measured.

Each ``benchmarks/bench_*.py`` runs in its own process with its defaults, its output shown
as it comes; every ``RATIO name value  (note)`` line it prints (benchmarks/ratio.py) goes into
the closing table, and a benchmark that printed none, or failed, is listed as such. The exit
status is 1 when a benchmark failed.

    python benchmarks/run_all.py [NAME ...]     # e.g. run_all.py mer negation (bench_<NAME>.py)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ratio import PATTERN

HERE = Path(__file__).resolve().parent


@dataclass
class Outcome:
    """What one benchmark run gave."""

    script: str
    status: int
    seconds: float
    ratios: list[tuple[str, str, str]] = field(default_factory=list)


def run(script: Path) -> Outcome:
    """Run ``script``, echoing its output, and keep its RATIO lines."""
    print(f"\n=== {script.name}", flush=True)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    outcome = Outcome(script.name, 0, 0.0)
    assert process.stdout is not None
    for line in process.stdout:
        print(line, end="", flush=True)
        match = PATTERN.match(line.strip())
        if match:
            outcome.ratios.append((match[1], match[2], match[3] or ""))
    outcome.status = process.wait()
    outcome.seconds = time.perf_counter() - started
    return outcome


def table(outcomes: list[Outcome]) -> str:
    """The summary: one row per ratio (or per benchmark without one)."""
    rows = [("benchmark", "ratio", "value", "what")]
    for o in outcomes:
        name = o.script.removeprefix("bench_").removesuffix(".py")
        if o.status != 0:
            rows.append((name, "-", "FAILED", f"exit status {o.status} after {o.seconds:.0f} s"))
        elif not o.ratios:
            rows.append((name, "-", "-", "printed no RATIO line"))
        rows += [(name, ratio, value, note) for ratio, value, note in o.ratios]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + f"  {row[3]}"
        for row in rows
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="only these benchmarks (bench_<NAME>.py)")
    args = parser.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.names:
        wanted = {f"bench_{name}.py" for name in args.names}
        unknown = wanted - {s.name for s in scripts}
        if unknown:
            parser.error(f"no such benchmark: {', '.join(sorted(unknown))}")
        scripts = [s for s in scripts if s.name in wanted]
    outcomes = [run(script) for script in scripts]
    print("\n=== summary: every ratio of this run\n" + table(outcomes))
    return 1 if any(o.status for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
