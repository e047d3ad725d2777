"""Headless Chromium (Debian's ``chromium``) driven over the Chrome DevTools Protocol.

:class:`Browser` starts the system binary with a private profile and a debugging port, opens
one page and records its console errors, uncaught exceptions and network requests; the
tests evaluate JavaScript in the page and take screenshots. :func:`chromium_or_skip` skips a
test when the binary is absent, except under ``CI=true``, where that is a failure.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

START_SECONDS = 30
CALL_SECONDS = 30


def chromium_or_skip() -> str:
    """The path of ``chromium``; skips the test when it is missing, fails under CI=true."""
    binary = shutil.which("chromium")
    if binary is None:
        why = "chromium is not installed (`apt-get install -y chromium`, as `make dev` does)"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return binary


class Browser:
    """One headless Chromium page; a context manager that kills the browser on exit."""

    def __init__(self, binary: str, profile: Path) -> None:
        self.process = subprocess.Popen(
            [
                binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-dev-shm-usage", "--remote-debugging-port=0",
                "--window-size=1400,1000", f"--user-data-dir={profile}", "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_SECONDS
        while not (port_file.is_file() and len(port_file.read_text().split()) == 2):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its debugging port")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            page = next(t for t in json.load(answer) if t["type"] == "page")
        self.socket = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=10)
        self.events: list[dict[str, Any]] = []
        self._next_id = 0
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result; events that arrive meanwhile are kept."""
        self._next_id += 1
        self.socket.send(json.dumps({"id": self._next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=CALL_SECONDS))
            if message.get("id") != self._next_id:
                self.events.append(message)
                continue
            if "error" in message:
                raise RuntimeError(f"{method}: {message['error']}")
            return message["result"]

    def open(self, url: str) -> None:
        """Navigate and wait for the page's load event."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + CALL_SECONDS
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            assert time.monotonic() < deadline, "the page never finished loading"
            self.events.append(json.loads(self.socket.recv(timeout=CALL_SECONDS)))

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (an exception fails the test)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (CSP violations) so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
                found.append(json.dumps(params["args"]))
            elif method == "Runtime.exceptionThrown":
                found.append(json.dumps(params["exceptionDetails"]))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(params["entry"]["text"])
        return found

    def requests(self) -> list[str]:
        """The URLs of every request the page made (its own file and data: URIs included)."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def screenshot(self) -> bytes:
        """A PNG of what the window shows."""
        shot = self.call("Page.captureScreenshot", format="png")
        return base64.b64decode(shot["data"])

    def close(self) -> None:
        if getattr(self, "socket", None) is not None:
            self.socket.close()
        self.process.kill()
        self.process.wait(timeout=10)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
