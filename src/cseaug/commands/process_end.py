"""The end of a ``cseaug`` process, without the interpreter's teardown (issue 14).

When a command is done, Python still tears the interpreter down: it clears every module and
collects every object. After a build that is some 2,600 modules and 250,000 objects (Prefect,
pydantic, pyarrow, pandas, openai, ...): 0.5–0.7 s on the development machine, a third of
what a build spends outside its phases, for nothing the user sees. :func:`end_process` does
what matters of Python's own shutdown and skips the rest:

1. it lets Python end the process as usual when a thread that is not a daemon still runs
   (Python waits for it: nothing is cut short), or when a profiler, debugger or coverage
   tool watches the process (``pyinstrument``, ``cProfile``, ``coverage`` write their
   report after the program ends);
2. it runs the ``atexit`` handlers, in Python's order (Prefect's: its log and event workers
   deliver what they hold, its temporary server stops; ``logging``'s: handlers are flushed
   and closed; ``weakref.finalize`` and ``tempfile`` clean-ups);
3. it flushes standard output and error and ends the process with the command's status.

What it skips is only what the garbage collector would do at the very end: finalizers of
objects still alive. A build leaves no file open for them to close
(``python -X dev`` reports no unclosed resource). ``benchmarks/bench_cli_fixed_costs.py``
measures the gain.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn


def working_threads() -> list[threading.Thread]:
    """Threads, other than this one, that Python would wait for before ending (not daemons)."""
    current = threading.current_thread()
    return [t for t in threading.enumerate() if t is not current and t.is_alive() and not t.daemon]


def watched() -> bool:
    """Whether a profiler, debugger or coverage tool watches this process."""
    return sys.getprofile() is not None or sys.gettrace() is not None


def end_process(status: int) -> NoReturn:
    """End this process with exit ``status`` once the ``atexit`` handlers have run, skipping
    the interpreter's teardown (see the module docstring); a non-daemon thread still running,
    or a profiler watching, gets Python's usual exit."""
    if working_threads() or watched():
        sys.exit(status)
    atexit._run_exitfuncs()  # what Python runs at exit, in its order; it forgets them after
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe or stream has nothing left to deliver
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)
