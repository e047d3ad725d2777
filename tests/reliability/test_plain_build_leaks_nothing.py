"""A plain ``cseaug build``, as a user runs it, against a server that echoes the API key.

One build in a fresh process (its own Prefect home, a temporary Prefect server, the user's
environment without the test suite's Prefect settings), every connection to another machine
sent through a proxy that records it. The tests read what that build left behind.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.fake_openai_server import Action, FakeOpenAIServer
from tests.reliability.attack_tools import (
    REPO,
    RecordingProxy,
    build_environment,
    files_holding,
    files_under,
    run_cseaug,
)

pytestmark = [pytest.mark.reliability, pytest.mark.slow, pytest.mark.prefect]

KEY = "sk-test-SECRET-1234567890"


def refuse_some_anchors(body: dict) -> Action:
    """Every view of about half the anchors gets a 401 that repeats the key; the rest an answer."""
    content = body["messages"][-1]["content"]
    return Action.unauthorized_echo() if zlib.crc32(content.encode()) % 2 else Action.ok()


@dataclass
class PlainBuild:
    returncode: int
    output: str
    root: Path
    prefect_home: Path
    proxied: list[str]
    authorizations: list[str]

    @property
    def version(self) -> Path:
        return self.root / "datasets" / "demo" / "v0001"


@pytest.fixture(scope="module")
def plain_build(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlainBuild]:
    work = tmp_path_factory.mktemp("plain-build")
    with FakeOpenAIServer(policy=refuse_some_anchors) as server, RecordingProxy() as proxy:
        env = build_environment(work / "prefect-home", proxy, OPENAI_API_KEY=KEY)
        overrides = {
            "corpus.path": str(REPO / "examples" / "demo_corpus.txt"),
            "llm.backend": "openai-compatible",
            "llm.base_url": server.base_url,
            "llm.model": "fake",
            "sample.size": 16,
            "output.root": str(work / "storage"),
            "diagnostics.cs_sample": 16,
            "publish.min_generated_share": 0,  # half the anchors fail on purpose: publish them
            "publish.min_pattern_share": 0,  # echo answers: one text for every level
        }
        args = ["build", "--config", str(REPO / "configs" / "demo.yaml")]
        for key, value in overrides.items():
            args += ["--set", f"{key}={value}"]
        done = run_cseaug(args, env, cwd=work)
        yield PlainBuild(
            returncode=done.returncode,
            output=done.stdout + done.stderr,
            root=work / "storage",
            prefect_home=work / "prefect-home",
            proxied=list(proxy.requests),
            authorizations=list(server.state.last_authorization.values()),
        )


def test_the_build_ran_and_the_server_echoed_the_key(plain_build: PlainBuild) -> None:
    """The premise of the other tests: the key was sent, and came back in 401 bodies."""
    assert plain_build.returncode == 0, plain_build.output[-3000:]
    # no PREFECT_API_URL: the command started Prefect's temporary server itself (issue 14)
    assert "note: starting Prefect's temporary server on http://127.0.0.1:" in plain_build.output
    assert f"Bearer {KEY}" in plain_build.authorizations
    rejects = pq.read_table(plain_build.version / "rejects.parquet").to_pylist()
    echoed = [r for r in rejects if r["reason"] == "llm_error"]
    assert echoed and all(
        "Incorrect API key provided: Bearer ***" in json.loads(r["detail"])["error"] for r in echoed
    )


def test_no_file_the_build_wrote_holds_the_key(plain_build: PlainBuild) -> None:
    """Proves 9.4: the key the server echoed is in no file of the output root (the published
    version, its rejects and manifest, the run store and plan.json, the LLM cache, the
    exports, the diagnostics) nor of Prefect's home (its database: flow-run parameters, task
    states, logs, artifacts, events), nor in what the build printed."""
    assert plain_build.returncode == 0, plain_build.output[-3000:]
    written = list(files_under(plain_build.root))
    assert any(p.name == "llm.sqlite" for p in written) and any(
        p.name == "plan.json" for p in written
    )
    database = plain_build.prefect_home / "prefect.db"
    with sqlite3.connect(database) as connection:
        logs = connection.execute("SELECT count(*) FROM log").fetchone()[0]
        artifacts = connection.execute("SELECT count(*) FROM artifact").fetchone()[0]
        parameters = connection.execute("SELECT parameters FROM flow_run").fetchone()[0]
    assert logs > 0 and artifacts > 0 and "overrides" in parameters  # what was scanned

    assert files_holding(plain_build.root, KEY) == []
    assert files_holding(plain_build.prefect_home, KEY) == []
    assert KEY not in plain_build.output


def test_nothing_leaves_the_machine_and_prefect_is_quiet(plain_build: PlainBuild) -> None:
    """Proves 9.9 / 11.4: without DO_NOT_TRACK or PREFECT_SERVER_ANALYTICS_ENABLED in the
    user's environment, a build tries no connection to another machine and prints nothing
    about telemetry. Before, Prefect's server sent a heartbeat (through the proxy: ``CONNECT
    sens-o-matic.prefect.io:443``), printing "Failed to send telemetry", or died trying with
    a ``send_telemetry_heartbeat`` traceback ("database is locked")."""
    assert plain_build.returncode == 0, plain_build.output[-3000:]
    assert plain_build.proxied == []
    assert "telemetry" not in plain_build.output.lower()
    assert "Traceback" not in plain_build.output
