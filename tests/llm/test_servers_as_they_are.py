"""Servers as they are: slower than the timeout, rate limiting for good, saturated by
queueing (docs/llm-backends.md, "Requests in flight", "Timeouts and rate limits"); against
the loopback server of tests/fake_openai_server.py, with small timeouts."""

from __future__ import annotations

import time

import pytest

from cseaug.llm.base import TRANSIENT, ChatRequest
from cseaug.llm.limiter import ConcurrencyLimit
from cseaug.llm.openai_backend import OpenAIBackend
from tests.fake_openai_server import Action, FakeOpenAIServer


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
        assert len(times) == 2 and times[1] - times[0] >= 0.8
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
        assert all(r.ok for r in llm.generate([ask(f"q{i}") for i in range(150)]))
        assert server.state.max_in_flight < 32
    assert llm.in_flight_limit() < 16


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
    for _ in range(20):
        limit.record(None)
    assert limit.limit == 2
    fixed = ConcurrencyLimit(4, 4)
    fixed.record(None)
    assert fixed.limit == 4
