"""The openai / openai-compatible backend against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import time

import pytest

from cseaug.errors import BackendError, ConfigError
from cseaug.llm.base import MALFORMED, PERMANENT, TRANSIENT
from cseaug.llm.openai_backend import (
    MAX_RETRY_AFTER_S,
    OpenAIBackend,
    retry_after_seconds,
    retry_delay,
)
from cseaug.llm.wire import parse_completion
from tests.fake_openai_server import Action, FakeOpenAIServer
from tests.llm.helpers import ask


def backend_for(server: FakeOpenAIServer, **kwargs) -> OpenAIBackend:
    options = {
        "name": "openai-compatible",
        "base_url": server.base_url,
        "concurrency": 8,
        "retry_initial_s": 0.01,
        "request_timeout_s": 5.0,
    }
    options.update(kwargs)
    sampling = options.pop("sampling", {"max_tokens": 32})
    return OpenAIBackend("fake-model", sampling, **options)


def test_answers_come_back_in_order_with_usage(server: FakeOpenAIServer) -> None:
    requests = [ask(f"sentence {i}") for i in range(30)]
    backend = backend_for(server)
    finished: list[int] = []

    responses = backend.generate(requests, progress=finished.append)

    assert [r.key for r in responses] == [r.key for r in requests]
    assert [r.text for r in responses] == [f"echo: sentence {i}" for i in range(30)]
    assert all(r.ok and not r.cached for r in responses)
    # the fake server reports len(words) + 3 prompt tokens and len(answer words) completion tokens
    assert [r.prompt_tokens for r in responses] == [5] * 30
    assert [r.completion_tokens for r in responses] == [3] * 30
    assert backend.usage.as_dict() == {
        "requests": 30,
        "failed": 0,
        "retried": 0,
        "cached": 0,
        "circuit_open": 0,
        "prompt_tokens": 150,
        "completion_tokens": 90,
        "answered_by:fake-model": 30,
    }
    assert sum(finished) == 30
    assert all(server.counts[f"sentence {i}"] == 1 for i in range(30))


def test_sampling_parameters_and_seed_reach_the_server(server: FakeOpenAIServer) -> None:
    sampling = {"temperature": 0.7, "top_p": 0.9, "max_tokens": 17, "seed": 40}
    backend = backend_for(server, sampling=sampling)
    backend.generate([ask("first", sample_index=0), ask("second", sample_index=2)])
    body = server.state.last_body["second"]
    assert body["model"] == "fake-model"
    assert body["messages"][-1] == {"role": "user", "content": "second"}
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (
        0.7,
        0.9,
        17,
        42,
    )
    assert server.state.last_body["first"]["seed"] == 40


def test_unset_sampling_parameters_are_not_sent(server: FakeOpenAIServer) -> None:
    backend_for(
        server, sampling={"temperature": None, "top_p": None, "max_tokens": 8, "seed": None}
    ).generate([ask("x")])
    assert set(server.state.last_body["x"]) == {"model", "messages", "max_tokens"}


def test_openai_backend_uses_max_completion_tokens_and_the_key(server, monkeypatch) -> None:
    monkeypatch.setenv("CSEAUG_TEST_KEY", "sk-test-123")
    backend = backend_for(server, name="openai", api_key_env="CSEAUG_TEST_KEY")
    assert backend.generate([ask("x")])[0].ok
    assert server.state.last_body["x"]["max_completion_tokens"] == 32
    assert "max_tokens" not in server.state.last_body["x"]
    assert server.state.last_authorization["x"] == "Bearer sk-test-123"


def test_openai_compatible_without_key_sends_a_placeholder(server, monkeypatch) -> None:
    monkeypatch.delenv("CSEAUG_TEST_KEY", raising=False)
    backend_for(server, api_key_env="CSEAUG_TEST_KEY").generate([ask("x")])
    assert server.state.last_authorization["x"] == "Bearer EMPTY"


def test_missing_key_for_openai_fails_before_any_request(server, monkeypatch) -> None:
    monkeypatch.delenv("CSEAUG_TEST_KEY", raising=False)
    backend = backend_for(server, name="openai", api_key_env="CSEAUG_TEST_KEY")
    with pytest.raises(BackendError, match="CSEAUG_TEST_KEY"):
        backend.check()
    with pytest.raises(BackendError, match="CSEAUG_TEST_KEY"):
        backend.generate([ask("x")])
    assert server.state.total == 0


def test_429_waits_as_long_as_retry_after_says(server: FakeOpenAIServer) -> None:
    server.script("throttled", Action.status_code(429, retry_after="1"))
    response = backend_for(server).generate([ask("throttled")])[0]
    assert response.ok
    first, second = server.state.arrivals["throttled"]
    # Never sooner than asked (a lower bound that a loaded machine cannot break); the
    # backoff alone would be ~0.01 s. How much later is retry_delay's, tested without clocks.
    assert second - first >= 1.0


def test_429_with_an_http_date_is_honoured(server: FakeOpenAIServer) -> None:
    from email.utils import formatdate

    server.script(
        "dated", Action.status_code(429, retry_after=formatdate(time.time() + 2, usegmt=True))
    )
    assert backend_for(server).generate([ask("dated")])[0].ok
    first, second = server.state.arrivals["dated"]
    # the date has one-second resolution: at least 1 s is left of the 2 asked for
    assert second - first >= 0.9


def test_retry_delay_honours_retry_after_with_bounded_jitter() -> None:
    for _ in range(200):
        assert 1.0 <= retry_delay({"Retry-After": "1"}, 1, 0.01, 30.0) <= 1.1
        assert 20.0 <= retry_delay({"retry-after-ms": "20000"}, 5, 0.01, 30.0) <= 21.0
        assert retry_delay({"Retry-After": "99999"}, 1, 0.01, 30.0) <= MAX_RETRY_AFTER_S + 1.0
        # no Retry-After: full jitter below the doubling bound, capped at max_s
        assert 0.0 <= retry_delay(None, 1, 0.5, 30.0) <= 0.5
        assert 0.0 <= retry_delay({}, 4, 0.5, 30.0) <= 4.0
        assert 0.0 <= retry_delay(None, 20, 0.5, 3.0) <= 3.0


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert (
        retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0)
        == 10.0
    )
    assert (
        retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412490.0)
        == 0.0
    )
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_server_errors_are_retried_until_success(server: FakeOpenAIServer) -> None:
    server.script("flaky", Action.status_code(500), Action.status_code(503))
    response = backend_for(server).generate([ask("flaky")])[0]
    assert response.ok and response.text == "echo: flaky"
    assert server.counts["flaky"] == 3


def test_retries_stop_after_max_retries(server: FakeOpenAIServer) -> None:
    server.script("down", *[Action.status_code(502)] * 10)
    backend = backend_for(server, max_retries=2)
    response = backend.generate([ask("down")])[0]
    assert not response.ok
    assert "HTTP 502" in response.error and "3 attempts" in response.error
    assert server.counts["down"] == 3
    assert backend.usage.failed == 1


def test_a_hanging_request_times_out_and_is_retried(server: FakeOpenAIServer) -> None:
    server.script("slow", Action.hang())
    start = time.monotonic()
    response = backend_for(server, request_timeout_s=0.3).generate([ask("slow"), ask("fast")])
    assert [r.ok for r in response] == [True, True]
    assert server.counts["slow"] == 2
    assert time.monotonic() - start < 3


def test_malformed_bodies_become_error_responses(server: FakeOpenAIServer) -> None:
    server.script("garbled", Action.malformed())
    server.script("empty", Action.no_choices())
    responses = backend_for(server).generate([ask("garbled"), ask("fine"), ask("empty")])
    assert [r.ok for r in responses] == [False, True, False]
    assert "not JSON" in responses[0].error
    assert "no choices" in responses[2].error
    # not a chat completion: a malformed_response, not sent again by a rerun (issue 21.1)
    assert responses[0].failure == responses[2].failure == MALFORMED
    assert server.counts["garbled"] == server.counts["empty"] == 1


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(server: FakeOpenAIServer, status: int) -> None:
    server.script("bad", Action.status_code(status))
    response = backend_for(server).generate([ask("bad")])[0]
    assert response.error == f"HTTP {status}: scripted {status}"
    assert server.counts["bad"] == 1
    assert response.failure == PERMANENT and not response.retryable


def test_unreachable_server_is_an_error_response() -> None:
    with FakeOpenAIServer() as stopped:
        url = stopped.base_url
    backend = OpenAIBackend(
        "m", {}, name="openai-compatible", base_url=url, max_retries=1, retry_initial_s=0.01
    )
    response = backend.generate([ask("x")])[0]
    assert not response.ok and "2 attempts" in response.error
    # issue 11.6: a dead endpoint is named as such, not as a slow one
    assert response.error == "connection refused (gave up after 2 attempts)"
    assert response.failure == TRANSIENT and response.retryable


def test_concurrency_is_bounded() -> None:
    with FakeOpenAIServer(latency_s=0.05) as server:
        backend_for(server, concurrency=4).generate([ask(f"q{i}") for i in range(40)])
        assert server.state.max_in_flight == 4
        assert server.state.total == 40


def test_on_response_sees_every_answer_as_it_arrives(server: FakeOpenAIServer) -> None:
    seen: dict[int, str | None] = {}
    responses = backend_for(server).generate(
        [ask(f"s{i}") for i in range(10)], on_response=lambda i, r: seen.__setitem__(i, r.text)
    )
    assert seen == {i: r.text for i, r in enumerate(responses)}


def test_generate_works_inside_a_running_event_loop(server: FakeOpenAIServer) -> None:
    backend = backend_for(server)

    async def inside() -> list[str | None]:
        return [r.text for r in backend.generate([ask("a"), ask("b")])]

    assert asyncio.run(inside()) == ["echo: a", "echo: b"]


def test_empty_batch_sends_nothing(server: FakeOpenAIServer) -> None:
    assert backend_for(server).generate([]) == []
    assert server.state.total == 0


def test_parse_completion_rejects_a_null_content() -> None:
    body = b'{"choices": [{"message": {"content": null}, "finish_reason": "content_filter"}]}'
    assert (
        parse_completion("k", body).error
        == "answer has no text content (finish_reason=content_filter)"
    )


KEY = "sk-test-SECRET-1234567890"


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "CSEAUG_LLM_PASS"])
def test_a_key_echoed_by_the_server_never_leaves_the_backend(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """A 401 body that repeats the key, or an answer that holds it, comes back scrubbed, whatever
    the name of the variable that holds the key (``CSEAUG_LLM_PASS`` has no secret word)."""
    monkeypatch.setenv(variable, KEY)
    server.script("refused", Action.unauthorized_echo())
    server.script("leaky", Action.answer(f"A sentence. By the way, my key is {KEY}."))
    backend = backend_for(server, api_key_env=variable)

    refused, leaky = backend.generate([ask("refused"), ask("leaky")])

    assert server.state.last_authorization["refused"] == f"Bearer {KEY}"  # it was sent...
    assert refused.error == "HTTP 401: Incorrect API key provided: Bearer ***"  # ...not kept
    assert leaky.text == "A sentence. By the way, my key is ***."


def test_credentials_in_the_base_url_are_refused() -> None:
    with pytest.raises(ConfigError, match="environment variable") as caught:
        OpenAIBackend(
            "m", {}, name="openai-compatible", base_url="http://user:hunter2@127.0.0.1:1/v1"
        )
    assert "hunter2" not in str(caught.value)
