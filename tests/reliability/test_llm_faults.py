"""A build against an endpoint that misbehaves: what is kept, what is recorded, what a rerun sends.

The library builds (plan, shards, publish) against the fake OpenAI server on 127.0.0.1,
scripted per sentence (every view of a sentence carries it as its user message). The
per-request retry behaviour of each fault is tested in tests/llm/test_openai_backend.py;
these tests follow the faults through a whole build and its rerun (issue 8, items 1 and 4).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.config import RunConfig
from cseaug.errors import BackendError
from cseaug.llm.cache import ResponseCache
from cseaug.pipeline.plan import plan_build
from cseaug.pipeline.publish import BuildSummary, publish_build
from cseaug.pipeline.run import BuildRun
from cseaug.pipeline.shard import ShardOutcome, generate_shard
from tests.fake_openai_server import Action, FakeOpenAIServer
from tests.reliability.attack_tools import REPO

pytestmark = pytest.mark.reliability

SENTENCES = (REPO / "examples" / "demo_corpus.txt").read_text(encoding="utf-8").splitlines()[:12]
VIEWS = 3  # NGCSE sts: positive, intermediate, negative
ATTEMPTS = 2  # llm.max_retries 1

TRANSIENT_FAULTS = {
    "429 without Retry-After": Action.status_code(429),
    "429 with Retry-After": Action.status_code(429, retry_after="0"),
    "500": Action.status_code(500),
    "503": Action.status_code(503),
    "slower than the timeout": Action.hang(),
    "dropped connection": Action.drop(),
    "truncated body": Action.truncated(),
}
PERMANENT_FAULTS = {
    "finish_reason=length": Action.length(),
    "400": Action.status_code(400),
    # a 200 that is no chat completion: malformed_response, not retried (issue 21.1)
    "non-JSON body": Action.malformed(),
}


def config(root: Path, base_url: str, **llm: Any) -> RunConfig:
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    return RunConfig.model_validate(
        {
            "name": "faults",
            "method": "sts",
            "corpus": {"path": str(corpus)},
            "sample": {"size": len(SENTENCES)},
            "patterns": {"source": "paper"},
            "llm": {
                "backend": "openai-compatible",
                "base_url": base_url,
                "model": "fake",
                "max_retries": 1,
                "request_timeout_s": 0.5,
                **llm,
            },
            "output": {"root": str(root)},
            # these tests read what a failing build records in its version: the publish gate,
            # which would stop it (tests/pipeline/test_publish_gate.py), is off
            "publish": {"min_generated_share": 0, "min_pattern_share": 0},
            "diagnostics": {"enabled": False},
        }
    )


def build(cfg: RunConfig) -> tuple[list[ShardOutcome], BuildSummary]:
    with BuildRun(cfg) as run:
        plan = plan_build(run)
        outcomes = [generate_shard(run, index) for index in range(plan.shards)]
        return outcomes, publish_build(run, outcomes)


def llm_rejects(summary: BuildSummary) -> list[dict[str, Any]]:
    rejects = pq.read_table(summary.version_dir / "rejects.parquet").to_pylist()
    return [r for r in rejects if r["stage"] == "llm"]


def test_a_server_that_fails_every_request_trips_the_breaker(tmp_path: Path) -> None:
    """Proves 8.1: with every request failing, the breaker stops generation after its window
    (4 requests sent of 36), records every unsent prompt as `circuit_open` (retryable), and
    the shard outcome counts generated / failed / circuit_open for a publish gate. A rerun
    against the recovered server sends every prompt, and the manifest counts the retries."""
    with FakeOpenAIServer(policy=lambda body: Action.status_code(500)) as server:
        cfg = config(
            tmp_path,
            server.base_url,
            max_retries=0,
            concurrency=1,
            circuit_breaker={"window": 4, "failure_rate": 0.75},
        )
        outcomes, summary = build(cfg)
        assert server.state.total == 4
        requests = len(SENTENCES) * VIEWS
        assert outcomes[0].llm == {
            "generated": 0,
            "failed": 4,
            "circuit_open": requests - 4,
            "retryable": requests,
        }
        reasons = [r["reason"] for r in llm_rejects(summary)]
        assert reasons.count("circuit_open") == requests - 4
        unsent = [r for r in llm_rejects(summary) if r["reason"] == "circuit_open"]
        assert all(json.loads(r["detail"])["retryable"] for r in unsent)
        assert "circuit breaker open: 4 of the last 4 requests failed" in unsent[0]["detail"]

        server.state.policy = None  # the endpoint recovers
        outcomes, again = build(cfg)
        assert server.state.total == 4 + requests
        assert outcomes[0].llm["generated"] == len(SENTENCES) and not outcomes[0].reused
        this_run = json.loads((again.version_dir / "manifest.json").read_text())["token_usage"][
            "this_run"
        ]
        assert this_run["requests"] == this_run["retried"] == requests


def test_answers_received_before_the_breaker_opens_stay_in_the_cache(tmp_path: Path) -> None:
    """Proves 8.1: answers that arrived before the endpoint went down are stored, and the rerun
    sends only what had no answer."""
    with FakeOpenAIServer() as server:
        healthy = set(SENTENCES[:4])
        server.state.policy = lambda body: (
            Action.ok() if body["messages"][-1]["content"] in healthy else Action.status_code(503)
        )
        cfg = config(
            tmp_path,
            server.base_url,
            max_retries=0,
            concurrency=1,
            circuit_breaker={"window": 6, "failure_rate": 0.9},
        )
        build(cfg)
        answered = len(ResponseCache(cfg.cache_path))
        assert answered >= len(healthy) * VIEWS - 1  # those sent before the breaker opened
        sent_first = server.state.total
        server.state.policy = None
        build(cfg)
        assert server.state.total - sent_first == len(SENTENCES) * VIEWS - answered


def test_each_fault_is_recorded_and_only_transient_ones_are_retried_by_a_rerun(
    tmp_path: Path,
) -> None:
    """Proves 8.4 and 11.6 end to end for every fault kind: 429 with and without Retry-After,
    500, 503, a response slower than the timeout, a dropped connection, a truncated body are
    `llm_error` rejects marked retryable; `finish_reason=length`, a 400 and a non-JSON body
    (a `malformed_response`) are not. A rerun of the same config against the recovered server sends the transient
    ones again, takes every earlier answer from the cache (0 requests for them), and the
    manifest counts cached / newly answered / retried."""
    faults = {**TRANSIENT_FAULTS, **PERMANENT_FAULTS}
    victims = dict(zip(SENTENCES, faults, strict=False))
    with FakeOpenAIServer() as server:
        for sentence, fault in victims.items():
            server.script(sentence, *[faults[fault]] * (VIEWS * ATTEMPTS))
        cfg = config(tmp_path, server.base_url, circuit_breaker=None, concurrency=16)
        _, first = build(cfg)
        by_sentence: dict[str, list[dict[str, Any]]] = {}
        for reject in llm_rejects(first):
            by_sentence.setdefault(reject["sentence"], []).append(reject)
        for sentence, fault in victims.items():
            details = [json.loads(r["detail"]) for r in by_sentence[sentence]]
            assert len(details) == VIEWS, fault
            assert all(d.get("retryable", False) == (fault in TRANSIENT_FAULTS) for d in details)
        assert first.aigen == len(SENTENCES) - len(victims)

        server.state.scripts.clear()
        before = dict(server.counts)
        _, second = build(cfg)
        resent = {s for s in SENTENCES if server.counts[s] > before.get(s, 0)}
        assert resent == set(victims)  # permanent failures are not cached either: sent again
        assert second.aigen == len(SENTENCES)
        usage = json.loads((second.version_dir / "manifest.json").read_text())["token_usage"]
        transient = sum(1 for fault in victims.values() if fault in TRANSIENT_FAULTS)
        assert usage["this_run"]["cached"] == (len(SENTENCES) - len(victims)) * VIEWS
        assert usage["this_run"]["requests"] == usage["this_run"]["retried"] == len(victims) * VIEWS
        assert transient * VIEWS < usage["this_run"]["retried"]
        assert usage["build"]["answers"] == len(SENTENCES) * VIEWS


def test_manifest_card_and_show_name_the_generator_and_what_the_build_spent(
    tmp_path: Path,
) -> None:
    """Proves 8.5: after a rerun that sent nothing, the manifest, the card and `cseaug show`
    still name backend, model, the served root and the sampling, and say what the whole
    build spent over its attempts (from the cache), not only this run's zero."""
    with FakeOpenAIServer() as server:
        cfg = config(tmp_path, server.base_url, temperature=0.3, seed=7)
        build(cfg)
        for path in (tmp_path / "runs").rglob("*.parquet"):  # a fresh run store, same cache
            path.unlink()
        # the same data again: published anyway, to read the second run's own manifest
        cfg.output.force_new_version = True
        _, second = build(cfg)
    manifest = json.loads((second.version_dir / "manifest.json").read_text())
    llm = manifest["model"]["llm"]
    assert (llm["backend"], llm["model"], llm["served"]["root"]) == (
        "openai-compatible",
        "fake",
        "fake",
    )
    assert llm["sampling"]["temperature"] == 0.3 and llm["sampling"]["seed"] == 7
    usage = manifest["token_usage"]
    requests = len(SENTENCES) * VIEWS
    assert usage["this_run"]["requests"] == 0 and usage["this_run"]["cached"] == requests
    assert usage["build"]["answers"] == usage["build"]["requests"] == requests
    assert usage["build"]["completion_tokens"] > 0 and manifest["timings"]["generate_build"] > 0
    line = "`fake` (backend openai-compatible; served root fake; served owned_by cseaug-tests"
    card = (second.version_dir / "README.md").read_text()
    assert f"Model: {line}" in card and "temperature=0.3" in card
    assert f"whole build: answers {requests}" in card
    shown = CliRunner().invoke(
        app, ["show", "faults", "--root", str(tmp_path)], env={"COLUMNS": "400"}
    )
    assert shown.exit_code == 0 and line.replace("`", "") in shown.output
    assert "this run: requests 0" in shown.output and f"answers {requests}" in shown.output


def test_a_dead_endpoint_stops_the_build_before_any_work(tmp_path: Path) -> None:
    """Proves 8.1: `check()` probes the endpoint; a refused connection ends the build with one
    line naming the URL and the cause, before a run store or a version exists."""
    with FakeOpenAIServer() as stopped:
        url = stopped.base_url
    with pytest.raises(BackendError, match=f"{url} cannot be reached: connection refused"):
        build(config(tmp_path, url))
    assert not (tmp_path / "runs").exists() and not (tmp_path / "datasets").exists()
