"""The CLI entry point: the environment it gives Prefect, and what it prints on an error."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator

import pytest

from cseaug import cli
from cseaug.cli import PREFECT_DEFAULTS, apply_prefect_defaults
from cseaug.errors import ConfigError


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """``main`` installs log scrubbing for the process: undo it after each test."""
    factory = logging.getLogRecordFactory()
    yield
    logging.setLogRecordFactory(factory)


def test_prefect_defaults_fill_what_the_user_left_unset() -> None:
    env = {"PREFECT_SERVER_ANALYTICS_ENABLED": ""}
    apply_prefect_defaults(env)
    assert env == PREFECT_DEFAULTS
    assert env["DO_NOT_TRACK"] == "1" and env["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"


def test_a_user_who_opts_in_is_respected() -> None:
    env = {
        "DO_NOT_TRACK": "0",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "true",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "30",
    }
    apply_prefect_defaults(env)
    assert env == {
        "DO_NOT_TRACK": "0",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "true",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "30",
    }


def test_error_messages_are_printed_scrubbed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "sk-test-SECRET-1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", key)

    def failing() -> None:
        raise ConfigError(f"the server refused {key}")

    monkeypatch.setattr(cli, "app", failing)
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "the server refused ***" in err and key not in err


def test_unexpected_tracebacks_are_printed_scrubbed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def crashing() -> None:
        raise RuntimeError("connect to http://user:hunter2@10.0.0.1/v1 failed")

    monkeypatch.setattr(cli, "app", crashing)
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "http://***@10.0.0.1/v1" in err and "hunter2" not in err


def test_prefect_is_not_imported_before_main_sets_its_environment() -> None:
    """Prefect reads its settings when imported: the CLI module (and every command module it
    registers) must leave that to the command that runs a flow, after ``main`` set them."""
    probe = "import sys, cseaug.cli; print('prefect' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (PermissionError(13, "Permission denied", "/srv/storage/datasets"), "permission denied"),
        (OSError(28, "No space left on device", "/srv/storage/x.parquet"), "no space left"),
    ],
)
def test_expected_os_errors_are_one_line_and_debug_shows_the_traceback(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: OSError,
    said: str,
) -> None:
    """Permission denied on the storage root (EACCES) or a full disk (ENOSPC) is one line
    naming the file and what to do, exit status 2; ``--debug`` (anywhere on the command
    line) adds the traceback."""

    def failing() -> None:
        raise error

    monkeypatch.setattr(cli, "app", failing)
    monkeypatch.setenv("CSEAUG_DEBUG", "")  # restored (unset) after the test: main sets it
    monkeypatch.setattr(sys, "argv", ["cseaug", "build"])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"error: {error.filename}: {said}")

    monkeypatch.setattr(sys, "argv", ["cseaug", "build", "--debug"])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" in err and said in err
