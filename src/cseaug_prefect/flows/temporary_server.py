"""Prefect's temporary server, started by ``cseaug build`` while it imports the flow.

It is Prefect's own temporary server (the command, settings and environment of
``prefect.server.api.server.SubprocessASGIServer``, which ``tests/flows/test_temporary_server.py``
compares), started by hand because Prefect starts it in the command's process group, and
Prefect 3.8 has no setting to do otherwise: a terminal's Ctrl-C stopped Prefect's server
first, and its client retried the flow's crash report (measured on 2026-12-07: exit status 1
and a traceback 142 s after the signal, against 4 s and the one stop line with this server
in a session of its own; docs/reliability.md, docs/prefect.md). Started here, it also starts
while the command imports the flow, and the command never imports the server application
(2.9 s less CPU per build, no wall time measurable on a loaded machine:
docs/performance.md). It stops at the process's exit (``atexit``), after Prefect's log and
event workers have delivered what they hold.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import time
import urllib.request

import prefect
from prefect.context import refresh_global_settings_context
from prefect.settings import get_current_settings

from cseaug.errors import CseaugError

PORT_IN_USE = 3
"""uvicorn's exit status when its port is taken (Prefect then tries another port, as here)."""

SERVER_ENVIRONMENT = {
    "PREFECT_UI_ENABLED": "0",
    "PREFECT__SERVER_EPHEMERAL": "1",
    "PREFECT__SERVER_FINAL": "1",
}
"""What makes Prefect's server a temporary one: no UI, only the services a temporary server runs."""

DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""Requests to this machine's server, never through an HTTP proxy of the environment."""


def wanted() -> bool:
    """Whether Prefect would start a temporary server for a flow of this process: no API
    address in its settings (environment, profile, ``.env``, ``prefect.toml``), and its
    temporary server allowed."""
    settings = get_current_settings()
    return not settings.api.url and settings.server.ephemeral.enabled


def free_port() -> int:
    """A port of 127.0.0.1 that nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_command(port: int) -> list[str]:
    """Prefect's own command of its temporary server on ``port``."""
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "--app-dir",
        str(prefect.__module_path__.parent),
        "--factory",
        "prefect.server.api.server:create_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "error",
        "--lifespan",
        "on",
    ]


def server_environment() -> dict[str, str]:
    """Prefect's own environment of its temporary server: this process's, with the settings
    set here (a profile's too) and :data:`SERVER_ENVIRONMENT`."""
    return {
        **os.environ,
        **SERVER_ENVIRONMENT,
        **get_current_settings().to_environment_variables(exclude_unset=True),
    }


class TemporaryServer:
    """Prefect's temporary server in a child process, from its start to this process's end."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process = self._launch()
        atexit.register(self.stop)

    def _launch(self) -> subprocess.Popen[bytes]:
        # A session of its own: a terminal's Ctrl-C reaches the command's process group, and
        # a server that stopped first would leave Prefect's client retrying it for minutes
        # while the flow reports its crash. The command stops it last, at its exit.
        return subprocess.Popen(
            server_command(self.port), env=server_environment(), start_new_session=True
        )

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def answers(self) -> bool:
        """Whether the server's health check answers 200 now."""
        try:
            with DIRECT.open(f"{self.api_url}/health", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def wait_until_ready(self) -> None:
        """Wait until the server answers, then point this process's Prefect at it
        (``PREFECT_API_URL``); a taken port gets another port, as Prefect does.

        Raises:
            CseaugError: the server ended, or did not answer within
                ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``.
        """
        timeout = get_current_settings().server.ephemeral.startup_timeout_seconds
        deadline = time.monotonic() + timeout
        while not self.answers():
            status = self.process.poll()
            if status == PORT_IN_USE:
                self.port = free_port()
                self.process = self._launch()
            elif status is not None:
                raise CseaugError(
                    f"Prefect's temporary server ended with exit status {status} before it "
                    "answered (its messages are above); a running server avoids it: "
                    "`prefect server start`, then export PREFECT_API_URL (docs/prefect.md)"
                )
            elif time.monotonic() > deadline:
                raise CseaugError(
                    f"Prefect's temporary server did not answer within {timeout} s "
                    "(PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS); raise it, or start "
                    "a server once (`prefect server start`) and export PREFECT_API_URL "
                    "(docs/prefect.md)"
                )
            time.sleep(0.1)
        if get_current_settings().ui_url is None:
            os.environ["PREFECT_UI_URL"] = ""  # no UI: no "View at" link, as Prefect's own
        os.environ["PREFECT_API_URL"] = self.api_url
        refresh_global_settings_context()  # Prefect's way to pick up a changed environment

    def stop(self) -> None:
        """Stop the server (as Prefect stops its own: terminate, then kill after 5 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
