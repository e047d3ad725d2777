"""`make bench` ends with one table of every benchmark's ratio (issue 14): each benchmark
prints a `RATIO name value  (note)` line and benchmarks/run_all.py collects them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_every_benchmark_prints_a_ratio_line() -> None:
    scripts = sorted(BENCHMARKS.glob("bench_*.py"))
    assert len(scripts) >= 13
    silent = [s.name for s in scripts if "print_ratio(" not in s.read_text(encoding="utf-8")]
    assert not silent, f"these benchmarks print no RATIO line: {silent}"


def test_run_all_collects_the_ratios_and_reports_failures(tmp_path: Path) -> None:
    """run_all.py on two throw-away benchmarks beside copies of it: one prints two ratios,
    one fails; the table lists both ratios and the failure, and the exit status is 1."""
    for name in ("run_all.py", "ratio.py"):
        (tmp_path / name).write_text((BENCHMARKS / name).read_text(encoding="utf-8"))
    (tmp_path / "bench_good.py").write_text(
        "from ratio import print_ratio\n"
        "print('measuring...')\n"
        "print_ratio('fast_vs_slow', 2.5, 'higher is better')\n"
        "print_ratio('small_vs_big', 0.25, 'memory')\n"
    )
    (tmp_path / "bench_broken.py").write_text("raise SystemExit(3)\n")
    done = subprocess.run(
        [sys.executable, str(tmp_path / "run_all.py")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    summary = done.stdout.split("=== summary", 1)[1].splitlines()
    assert any("good" in r and "fast_vs_slow" in r and "2.500" in r for r in summary)
    assert any("good" in r and "small_vs_big" in r and "0.250" in r for r in summary)
    assert any("broken" in r and "FAILED" in r and "exit status 3" in r for r in summary)
