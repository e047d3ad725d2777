"""Prefect's temporary server as ``cseaug build`` starts it (issue 14): Prefect's own command and
environment, started before the flow is imported, and the client never imports the server
application (2.7-3.1 s of the CLI's start on the development machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cseaug_prefect.flows import temporary_server


def test_the_command_and_environment_are_prefects_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """What Prefect's ``SubprocessASGIServer`` would launch on the same port is what is
    launched here: a Prefect upgrade that changes it fails this test."""
    from prefect.server.api import server as prefect_server

    launched: dict[str, Any] = {}
    monkeypatch.setattr(
        prefect_server.subprocess, "Popen", lambda args, env: launched.update(args=args, env=env)
    )
    port = temporary_server.free_port()
    try:
        prefect_server.SubprocessASGIServer(port)._run_uvicorn_command()
    finally:
        prefect_server.SubprocessASGIServer._instances.pop(port, None)
    assert launched["args"] == temporary_server.server_command(port)
    assert launched["env"] == temporary_server.server_environment()


def test_no_server_is_started_when_prefect_has_one_to_talk_to() -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        assert not temporary_server.wanted()


FLOW_ON_THE_SERVER = """
import atexit, json, os, sys
from prefect.events.worker import EventsWorker
from prefect.logging.handlers import APILogWorker
from cseaug_prefect.flows.temporary_server import TemporaryServer

# runs at exit after the server's stop (registered later), before logging's shutdown
atexit.register(lambda: print(json.dumps({"workers_left": len(APILogWorker._instances)
                                           + len(EventsWorker._instances)})))
server = TemporaryServer()
from prefect import flow, task  # while the server starts, as the flow's import in `cseaug build`

@task(name="temporary-server-task")
def forty_two() -> int:
    return 42

@flow(name="temporary-server-check")
def answer() -> int:
    return forty_two()

server.wait_until_ready()
print(json.dumps({
    "answer": answer(),
    "pid": server.process.pid,
    "api_url": os.environ["PREFECT_API_URL"],
    "server_app_imported": "prefect.server.api.server" in sys.modules,
}))
"""


@pytest.mark.prefect
@pytest.mark.slow
def test_a_flow_runs_on_it_and_it_stops_with_the_process(tmp_path: Path) -> None:
    """A fresh process with no Prefect server (a user's first ``cseaug build``): the server
    starts, a flow runs on it, the process never imports Prefect's server application, and
    the server stops at the exit once Prefect has delivered the run's logs and events."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), DO_NOT_TRACK="1")
    done = subprocess.run(
        [sys.executable, "-c", FLOW_ON_THE_SERVER],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    *_, line, at_exit = done.stdout.strip().splitlines()
    report = json.loads(line)
    assert report["answer"] == 42
    assert report["api_url"].startswith("http://127.0.0.1:")
    assert report["server_app_imported"] is False
    assert not Path(f"/proc/{report['pid']}").exists()  # stopped (and reaped) at the exit
    # Prefect's log and event workers delivered what they held before the server stopped
    # (at the threads' end, before the atexit handlers): nothing left for logging's
    # shutdown to send to a stopped server (it waited 5 s, and events were lost)
    assert json.loads(at_exit) == {"workers_left": 0}
    assert "View at" not in done.stderr + done.stdout  # no UI: no link, as Prefect's own


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("raise SystemExit(1)", "ended with exit status 1 before it answered"),
        ("import time; time.sleep(30)", "did not answer within 1 s"),
    ],
)
def test_a_server_that_does_not_start_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, command: str, said: str
) -> None:
    """A server that ends, or does not answer within Prefect's start timeout, is one
    ``CseaugError`` (the CLI prints it as one line) that says what to do; no server is left."""
    from prefect.settings import (
        PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS,
        temporary_settings,
    )

    from cseaug.errors import CseaugError

    monkeypatch.setattr(
        temporary_server, "server_command", lambda port: [sys.executable, "-c", command]
    )
    with temporary_settings(updates={PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS: 1}):
        server = temporary_server.TemporaryServer()
        try:
            with pytest.raises(CseaugError, match=said) as caught:
                server.wait_until_ready()
        finally:
            server.stop()
    assert "PREFECT_API_URL" in str(caught.value) and server.process.poll() is not None
    assert os.environ.get("PREFECT_API_URL") != server.api_url
