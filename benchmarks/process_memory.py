"""Peak resident memory of a child process and its descendants, for the build benchmarks.

Two figures, both Linux-only and both from the kernel (no extra package):

- ``tree_peak_mib``: the largest sum of ``VmRSS`` over the process and every descendant
  (a Prefect temporary server, Dask workers), sampled from ``/proc`` every ``interval``
  seconds while it runs; a peak between two samples can be missed.
- ``largest_mib``: the kernel's ``ru_maxrss`` from ``os.wait4``: the largest single
  process among the child and the descendants it waited for, exact but not a sum.
"""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass
class PeakMemory:
    """What :func:`run_sampled` measured, in MiB."""

    tree_peak_mib: float
    largest_mib: float

    def __str__(self) -> str:
        return (
            f"{self.tree_peak_mib:,.0f} MiB (process tree, sampled), "
            f"{self.largest_mib:,.0f} MiB (largest single process, wait4)"
        )


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it, from ``/proc/<pid>/task/*/children``."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        for task in (PROC / str(current) / "task").glob("*"):
            try:
                queue += [int(child) for child in (task / "children").read_text().split()]
            except OSError:
                continue
    return found


def rss_kib(pid: int) -> int:
    """Resident memory of one process in KiB (0 once it is gone)."""
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_sampled(
    command: list[str], interval: float = 0.5, **popen: object
) -> tuple[subprocess.CompletedProcess, PeakMemory]:
    """Run ``command`` to its end (output captured as text) and measure its peak memory."""
    peak, done, outputs = [0], threading.Event(), {"out": "", "err": ""}
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    ) as process:

        def sample() -> None:
            while not done.wait(interval):
                peak[0] = max(peak[0], sum(rss_kib(p) for p in descendants(process.pid)))

        threads = [threading.Thread(target=sample, daemon=True)] + [
            threading.Thread(target=lambda n=n, s=s: outputs.__setitem__(n, s.read()))
            for n, s in (("out", process.stdout), ("err", process.stderr))
        ]
        for thread in threads:
            thread.start()
        _, status, usage = os.wait4(process.pid, 0)  # the child's own rusage, for ru_maxrss
        process.returncode = os.waitstatus_to_exitcode(status)
        done.set()
        for thread in threads:
            thread.join()
    completed = subprocess.CompletedProcess(
        command, process.returncode, outputs["out"], outputs["err"]
    )
    return completed, PeakMemory(peak[0] / 1024, usage.ru_maxrss / 1024)
