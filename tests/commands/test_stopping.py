"""A stop of a command in one line, with the signal's exit status (issue 21, item 11); the
whole command is stopped for real in tests/reliability/test_stopping.py."""

from __future__ import annotations

import signal

import pytest
import typer

from cseaug.commands.stopping import StopRequested, one_line_on_stop


@pytest.mark.parametrize(
    ("interrupt", "status", "name"),
    [
        (KeyboardInterrupt(), 130, "SIGINT"),  # Python's own Ctrl-C
        (StopRequested(signal.SIGINT), 130, "SIGINT"),
        (StopRequested(signal.SIGTERM), 143, "SIGTERM"),
    ],
)
def test_a_stop_ends_in_one_line_with_the_signals_exit_status(
    interrupt: KeyboardInterrupt, status: int, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(typer.Exit) as ended, one_line_on_stop(lambda: "kept 2 of 3 shards"):
        raise interrupt
    assert ended.value.exit_code == status
    assert capsys.readouterr().err == f"stopped ({name}): kept 2 of 3 shards\n"


def test_a_stop_with_nothing_kept_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit), one_line_on_stop(lambda: None):
        raise KeyboardInterrupt
    assert capsys.readouterr().err == "stopped (SIGINT): nothing to resume\n"
