"""Servers as they are: slower than the timeout, rate limiting for good, saturated by
queueing (docs/llm-backends.md, "Requests in flight", "Timeouts and rate limits"); against
the loopback server of tests/fake_openai_server.py, with small timeouts."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from cseaug.config import RunConfig
from cseaug.llm.base import ANSWERED_BY, TRANSIENT, ChatRequest
from cseaug.llm.cache import CachedBackend
from cseaug.llm.limiter import ConcurrencyLimit
from cseaug.llm.openai_backend import OpenAIBackend
from cseaug.pipeline.local import run_build
from tests.fake_openai_server import Action, FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]


def ask(content: str) -> ChatRequest:
    return ChatRequest(key=content, messages=({"role": "user", "content": content},))


def backend(server: FakeOpenAIServer, **options) -> OpenAIBackend:
    settings = {"retry_initial_s": 0.01, "concurrency": 8, **options}
    return OpenAIBackend("fake", {}, name="openai-compatible", base_url=server.base_url, **settings)


def warnings(caplog: pytest.LogCaptureFixture, words: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if words in r.getMessage()]


def test_a_server_slower_than_the_timeout_is_said_once_and_not_sent_the_request_again_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with FakeOpenAIServer(latency_s=3.0) as server:
        llm = backend(server, request_timeout_s=0.4, max_retries=1)
        responses = llm.generate([ask(f"slow {i}") for i in range(4)])
        arrivals = dict(server.state.arrivals)
    assert not any(r.ok for r in responses)
    [line] = warnings(caplog, "time out")
    assert "0.4 s" in line and "may need longer" in line
    assert "llm.request_timeout_s" in line and "llm.concurrency" in line
    for times in arrivals.values():
        # sent again only after as long as it ran, while the server still computes it
        assert len(times) == 2 and times[1] - times[0] >= 0.7  # 0.4 s + 0.4 s, a client's clock
    # the timeouts lowered the requests in flight
    assert llm.in_flight_limit() < 8


def test_an_endpoint_that_only_answers_429_ends_within_the_budget_with_one_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with FakeOpenAIServer() as server:
        server.state.policy = lambda _body: Action.status_code(429, retry_after="86400")
        llm = backend(server, rate_limit_budget_s=1.5, max_retries=20)
        started = time.monotonic()
        responses = llm.generate([ask(f"q{i}") for i in range(6)])
        took = time.monotonic() - started
    assert took < 1.5 + 3  # not the 120 s a Retry-After of a day is capped at
    assert all(r.failure == TRANSIENT and "llm.rate_limit_budget_s" in r.error for r in responses)
    [named] = warnings(caplog, "rate limiting (HTTP 429)")
    assert "86400 s (Retry-After)" in named and "120 s a time" in named
    assert len(warnings(caplog, "answered only HTTP 429 for 1.5 s")) == 1


def test_429s_between_answers_do_not_spend_the_budget() -> None:
    with FakeOpenAIServer() as server:
        for i in range(4):
            server.script(f"q{i}", Action.status_code(429, retry_after="0.4"), Action.ok())
        llm = backend(server, rate_limit_budget_s=0.6, concurrency=1)
        assert all(r.ok for r in llm.generate([ask(f"q{i}") for i in range(4)]))


def test_a_server_saturated_by_queueing_gets_fewer_requests_in_flight() -> None:
    with FakeOpenAIServer(latency_s=0.02, capacity=2) as server:
        llm = backend(server, concurrency=32, request_timeout_s=30.0)
        limits: list[int | None] = []
        answers = llm.generate(
            [ask(f"q{i}") for i in range(300)],
            on_response=lambda _i, _r: limits.append(llm.in_flight_limit()),
        )
    assert all(r.ok for r in answers)
    peak = max(limits)  # slow start: one more per answer until answers take 3 times as long
    assert peak > 4 and min(limits[limits.index(peak) :]) <= peak // 2  # then halved


def test_a_healthy_server_is_given_the_whole_range() -> None:
    with FakeOpenAIServer(latency_s=0.05) as server:
        llm = backend(server, concurrency=(2, 8))
        llm.generate([ask(f"q{i}") for i in range(60)])
        assert server.state.max_in_flight == 8 and llm.in_flight_limit() == 8


def test_the_limit_halves_once_per_round_and_stays_in_its_range() -> None:
    limit = ConcurrencyLimit(2, 16)
    for _ in range(30):
        limit.record(1.0)
    assert limit.limit == 16
    limit.record(None)
    limit.record(None)  # the same round: one halving
    assert limit.limit == 8
    for _ in range(200):
        limit.record(None)
    assert limit.limit == 2
    fixed = ConcurrencyLimit(4, 4)
    fixed.record(None)
    assert fixed.limit == 4


def test_answers_naming_another_model_are_said_once_and_kept_with_their_model_in_the_cache(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeOpenAIServer() as server:
        server.state.answer_model = "router/other-model"
        cached = CachedBackend(backend(server), tmp_path / "llm.sqlite")
        sent = cached.generate([ask(f"q{i}") for i in range(5)])
        assert {r.model for r in sent} == {"router/other-model"}
        again = CachedBackend(backend(server), tmp_path / "llm.sqlite")
        stored = again.generate([ask(f"q{i}") for i in range(5)])
    assert all(r.cached for r in stored) and {r.model for r in stored} == {"router/other-model"}
    assert again.usage.as_dict()[ANSWERED_BY + "router/other-model"] == 5
    [line] = warnings(caplog, "the answers name the model")
    assert "'router/other-model', not llm.model 'fake'" in line


def test_a_build_records_the_model_that_answered_in_the_manifest_and_the_card(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sentences = (REPO / "examples" / "demo_corpus.txt").read_text().splitlines()[:4]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sentences) + "\n")
    with FakeOpenAIServer() as server:
        server.state.answer_model = "served-elsewhere"
        cfg = RunConfig.model_validate(
            {
                "name": "provenance",
                "method": "sts",
                "corpus": {"path": str(corpus)},
                "sample": {"size": len(sentences), "include_other": False},
                "patterns": {"source": "paper"},
                "llm": {
                    "backend": "openai-compatible",
                    "base_url": server.base_url,
                    "model": "fake",
                },
                "output": {"root": str(tmp_path / "storage")},
                "diagnostics": {"enabled": False},
                "publish": {"min_pattern_share": 0},  # the fake answers are not graded
            }
        )
        version = run_build(cfg).version_dir
    manifest = json.loads((version / "manifest.json").read_text())
    assert manifest["model"]["answered_by"] == {"served-elsewhere": 3 * len(sentences)}
    assert manifest["model"]["llm"]["model"] == "fake"
    assert not any(k.startswith(ANSWERED_BY) for k in manifest["token_usage"]["this_run"])
    card = (version / "README.md").read_text()
    assert f"answered by `served-elsewhere`: {3 * len(sentences)} answers" in card
    assert len(warnings(caplog, "the answers name the model")) == 1


def test_noisy_latency_of_a_healthy_server_is_not_overload() -> None:
    draw = random.Random(0)
    limit = ConcurrencyLimit(1, 64)
    seen = []
    for _ in range(3000):
        limit.record(draw.lognormvariate(0, 0.8))  # answers from 0.2x to 5x the median
        seen.append(limit.limit)
    assert min(seen[100:]) == 64


def test_concurrency_is_a_number_as_before_or_a_range() -> None:
    from pydantic import ValidationError

    from cseaug.config import LLMConfig
    from cseaug.llm.factory import make_backend

    def configured(concurrency: object) -> LLMConfig:
        url = "http://127.0.0.1:8000/v1"
        return LLMConfig(
            backend="openai-compatible", model="m", base_url=url, concurrency=concurrency
        )

    assert make_backend(configured(16), None).concurrency == (1, 16)  # type: ignore[attr-defined]
    assert make_backend(configured({"min": 2, "max": 8}), None).concurrency == (2, 8)  # type: ignore[attr-defined]
    assert make_backend(configured({"max": 8}), None).concurrency == (1, 8)  # type: ignore[attr-defined]
    with pytest.raises(ValidationError, match="min 9 is above max 8"):
        configured({"min": 9, "max": 8})
