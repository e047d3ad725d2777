"""Wall-clock marks of one build in this process, for the ``timings`` of its manifest (issue 14).

The command line marks when it started (:data:`CLI_STARTED`) and when it handed the build to
Prefect (:data:`FLOW_CALLED`); the plan step marks when the flow's first task began
(:data:`PLAN_STARTED`). The publish step :func:`take` s them, so that a later build in the
same process starts from none. A build that runs where the marks were not made (a Prefect
worker, :func:`cseaug.build.local.run_build`) records only the phases it measured itself.

Example:
    >>> mark(CLI_STARTED); mark(FLOW_CALLED)
    >>> sorted(take())
    ['cli_started', 'flow_called']
    >>> take()
    {}
"""

from __future__ import annotations

import threading
import time

CLI_STARTED = "cli_started"
FLOW_CALLED = "flow_called"
PLAN_STARTED = "plan_started"

_marks: dict[str, float] = {}
_lock = threading.Lock()


def mark(name: str) -> None:
    """Record now (seconds since the epoch) under ``name``, replacing an earlier mark."""
    with _lock:
        _marks[name] = time.time()


def take() -> dict[str, float]:
    """Every mark made since the last call, and forget them."""
    with _lock:
        out = dict(_marks)
        _marks.clear()
    return out


def build_timings(
    marks: dict[str, float], phases: dict[str, float], now: float
) -> dict[str, float]:
    """The manifest's ``timings``: the measured ``phases`` plus what the marks tell.

    * ``startup``: from the CLI's start to handing the build to Prefect (imports, config);
    * ``prefect_start``: from there to the first task (the temporary server's start when
      ``PREFECT_API_URL`` is not set, the flow run's creation);
    * ``orchestration``: the rest of the flow up to ``now`` that no phase accounts for (task
      states, logs and results between the phases).

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
