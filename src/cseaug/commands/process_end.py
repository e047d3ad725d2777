"""The end of a ``cseaug`` process, without the interpreter's teardown (issue 14).

When a command is done, Python still tears the interpreter down: it clears every module and
collects every object. After a build that is some 2,600 modules and 250,000 objects (Prefect,
pydantic, pyarrow, pandas, openai, ...): 0.5–0.7 s on the development machine, a third of
what a build spends outside its phases, for nothing the user sees. :func:`end_process` does
what matters of Python's own shutdown, in its order, and skips the rest:

1. threads: the callbacks registered with ``threading`` for the end (Prefect's log and
   event workers deliver what they hold there: skipping them lost events and made
   ``logging``'s shutdown wait 5 s for a stopped temporary server), then it waits for every
   thread that is not a daemon, as Python does;
2. the ``atexit`` handlers (Prefect's temporary server stops; ``logging`` flushes and
   closes its handlers; ``weakref.finalize`` and ``tempfile`` clean up);
3. it flushes standard output and error and ends the process with the command's status.

What it skips is only what the garbage collector would do at the very end: finalizers of
objects still alive. A build leaves no file open for them to close
(``python -X dev`` reports no unclosed resource). A process that a profiler, debugger or
coverage tool watches gets Python's usual exit (``pyinstrument``, ``cProfile`` and
``coverage`` write their report after the program ends).
``benchmarks/bench_cli_fixed_costs.py`` measures the gain.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn


def watched() -> bool:
    """Whether a profiler, debugger or coverage tool watches this process."""
    return sys.getprofile() is not None or sys.gettrace() is not None


def end_process(status: int) -> NoReturn:
    """End this process with exit ``status`` once the threads' exit callbacks and the
    ``atexit`` handlers have run, skipping the interpreter's teardown (see the module
    docstring); a process a profiler watches gets Python's usual exit."""
    if watched():
        sys.exit(status)
    # What Python's own shutdown runs, in its order (both are CPython's, since 3.0 / 3.9):
    threading._shutdown()  # type: ignore[attr-defined]  # threading's exit callbacks, then joins
    atexit._run_exitfuncs()  # the atexit handlers; forgotten once run
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe or stream has nothing left to deliver
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)
