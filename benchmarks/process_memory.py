"""Peak resident memory of a child process and its descendants, for the build benchmarks.

Two figures, both Linux-only and both from the kernel (no extra package):

- ``tree_peak_mib``: the largest sum of ``VmRSS`` over the process and every descendant
  (a Prefect temporary server, Dask workers), sampled from ``/proc`` every ``interval``
  seconds while it runs; a peak between two samples can be missed.
- ``largest_mib``: the largest ``VmHWM`` (the kernel's own peak resident memory of one
  process since its ``exec``) among the same processes at the same samples: exact per
  process, but a process that starts and ends between two samples is missed. (``ru_maxrss``
  from ``wait4`` is not used: it keeps the parent's resident memory at ``fork``, so a child of
  a large process, such as a test runner, reported the parent's size.)
"""

from __future__ import annotations

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
            f"{self.largest_mib:,.0f} MiB (largest single process, VmHWM)"
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


def status_kib(pid: int, field: str) -> int:
    """One memory ``field`` of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``) in KiB; 0 once the
    process is gone."""
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_sampled(
    command: list[str], interval: float = 0.5, **popen: object
) -> tuple[subprocess.CompletedProcess, PeakMemory]:
    """Run ``command`` to its end (output captured as text) and measure its peak memory."""
    peak, largest, done = [0], [0], threading.Event()
    outputs = {"out": "", "err": ""}
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    ) as process:

        def sample() -> None:
            while not done.wait(interval):
                tree = descendants(process.pid)
                peak[0] = max(peak[0], sum(status_kib(p, "VmRSS") for p in tree))
                largest[0] = max([largest[0]] + [status_kib(p, "VmHWM") for p in tree])

        threads = [threading.Thread(target=sample, daemon=True)] + [
            threading.Thread(target=lambda n=n, s=s: outputs.__setitem__(n, s.read()))
            for n, s in (("out", process.stdout), ("err", process.stderr))
        ]
        for thread in threads:
            thread.start()
        process.wait()
        done.set()
        for thread in threads:
            thread.join()
    completed = subprocess.CompletedProcess(
        command, process.returncode, outputs["out"], outputs["err"]
    )
    return completed, PeakMemory(peak[0] / 1024, largest[0] / 1024)
