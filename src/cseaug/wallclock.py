"""Wall-clock marks of one build, for the ``timings`` of its manifest and the wall time of
its summary.

``cseaug build`` makes the build's :class:`Clock` with its process's start and marks the
hand-over to Prefect; the build's run carries it to the plan step, which marks the first
task, and to the publish step, which reads the marks.

Example:
    >>> clock = Clock({CLI_STARTED: 0.0}); clock.mark(FLOW_CALLED)
    >>> list(clock.marks), clock.marks[FLOW_CALLED] > clock.marks[CLI_STARTED]
    (['cli_started', 'flow_called'], True)
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

CLI_STARTED = "cli_started"
FLOW_CALLED = "flow_called"
PLAN_STARTED = "plan_started"


@dataclass
class Clock:
    """The marks of one build, in seconds since the epoch, by name (see the module docstring)."""

    marks: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str) -> None:
        """Record now under ``name``, replacing an earlier mark."""
        self.marks[name] = time.time()


def process_started() -> float:
    """When this process started, in seconds since the epoch (to 1/100 s); now where
    ``/proc`` does not tell (not Linux)."""
    try:
        # field 22 of /proc/self/stat, after the command name in parentheses: clock ticks
        # from the boot to the process's start; /proc/uptime: seconds since the boot
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return time.time()
    return time.time() - max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))


def build_timings(
    marks: dict[str, float], phases: dict[str, float], now: float
) -> dict[str, float]:
    """The manifest's ``timings``: the measured ``phases`` plus ``startup``, ``prefect_start``
    and ``orchestration`` (up to ``now``) from the marks; docs/prefect.md says what each covers.
    With every mark made and phases that ran one after the other, the parts add up to
    :func:`wall_seconds`.

    Example:
        >>> build_timings({"cli_started": 0.0, "flow_called": 1.0, "plan_started": 9.0},
        ...               {"plan": 2.0, "generate": 5.0}, now=17.5)
        {'plan': 2.0, 'generate': 5.0, 'startup': 1.0, 'prefect_start': 8.0, 'orchestration': 1.5}
    """
    out = dict(phases)
    if CLI_STARTED in marks and FLOW_CALLED in marks:
        out["startup"] = round(marks[FLOW_CALLED] - marks[CLI_STARTED], 3)
    if FLOW_CALLED in marks and PLAN_STARTED in marks:
        out["prefect_start"] = round(marks[PLAN_STARTED] - marks[FLOW_CALLED], 3)
    if PLAN_STARTED in marks:
        out["orchestration"] = round(max(0.0, now - marks[PLAN_STARTED] - sum(phases.values())), 3)
    return out


def wall_seconds(marks: dict[str, float], phases: dict[str, float], now: float) -> float:
    """The wall time up to ``now`` from the earliest mark (the command's start, else the
    hand-over to Prefect, else the first task); the sum of ``phases`` without marks.

    Example:
        >>> wall_seconds({"flow_called": 1.0, "plan_started": 9.0}, {"plan": 2.0}, now=17.5)
        16.5
    """
    started = [marks[name] for name in (CLI_STARTED, FLOW_CALLED, PLAN_STARTED) if name in marks]
    return round(now - min(started), 3) if started else round(sum(phases.values()), 3)
