"""The end of a ``cseaug`` process (issue 14): the atexit handlers run, the output is
delivered, the status kept, and the interpreter's teardown (0.5-0.7 s after a build) skipped."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

ENDING = """
import atexit, sys, threading, time
from cseaug.commands.process_end import end_process

class Collected:
    def __del__(self):
        sys.stderr.write("teardown ran\\n")

alive_until_the_end = Collected()
atexit.register(lambda: sys.stdout.write("atexit ran\\n"))  # left in the buffer
threading._register_atexit(lambda: sys.stdout.write("threads' exit ran\\n"))  # Prefect's workers
sys.stdout.write("unflushed output\\n")
if sys.argv[1] == "thread":
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread finished"))).start()
end_process(3)
"""
"""A process that ends through :func:`end_process` with status 3; with ``thread``, while a
thread that is not a daemon still works."""


def ending(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENDING, mode], capture_output=True, text=True, timeout=60
    )


def test_the_process_ends_after_the_atexit_handlers_without_the_teardown() -> None:
    done = ending("plain")
    assert done.returncode == 3, done.stderr
    assert done.stdout.splitlines() == ["unflushed output", "threads' exit ran", "atexit ran"]
    assert "teardown ran" not in done.stderr  # the interpreter was not torn down


def test_a_working_thread_gets_pythons_usual_exit() -> None:
    """A thread that is not a daemon is waited for, as Python does: nothing is cut short."""
    done = ending("thread")
    assert done.returncode == 3, done.stderr
    assert done.stdout.splitlines()[1:] == ["threads' exit ran", "thread finished", "atexit ran"]


def test_the_cseaug_script_ends_through_run_with_the_commands_status() -> None:
    """The installed script calls ``cli.run``: the command's exit status (2 for an expected
    failure) and everything it printed survive the fast end."""
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "cseaug"]
    assert script.value == "cseaug.cli:run"
    code = (
        "import sys\n"
        "import cseaug.cli as cli\n"
        "from cseaug.errors import ConfigError\n"
        "def app():\n    print('working', end='')\n    raise ConfigError('the config is wrong')\n"
        "cli.app = app\n"
        "cli.run()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "working" and "error: the config is wrong" in done.stderr


def test_a_profiled_process_gets_pythons_usual_exit(tmp_path: Path) -> None:
    """A profiler writes its report after the program ends (``pyinstrument cseaug build``)."""
    script, report = tmp_path / "ending.py", tmp_path / "ending.prof"
    script.write_text(ENDING, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(report), str(script), "plain"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "atexit ran" in done.stdout, done.stderr
    assert report.is_file() and report.stat().st_size > 0  # (cProfile itself exits 0)
