"""``llm.base_url`` as a list: requests over several loopback servers, one dying and coming
back, the cache shared whichever endpoint answered, and the validation of the list."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from cseaug.config import FailoverConfig, LLMConfig, apply_overrides
from cseaug.errors import ConfigError
from cseaug.llm.base import ChatRequest
from cseaug.llm.cache import CachedBackend
from cseaug.llm.openai_backend import OpenAIBackend
from tests.fake_openai_server import FakeOpenAIServer
from tests.llm.helpers import ask


@pytest.fixture()
def two() -> Iterator[tuple[FakeOpenAIServer, FakeOpenAIServer]]:
    with FakeOpenAIServer(latency_s=0.01) as a, FakeOpenAIServer(latency_s=0.01) as b:
        yield a, b


def backend(urls: str | list[str], concurrency: int = 4, cooldown_s: float = 5.0) -> OpenAIBackend:
    return OpenAIBackend(
        "fake",
        {"max_tokens": 16},
        name="openai-compatible",
        base_url=urls,
        concurrency=concurrency,
        retry_initial_s=0.01,
        retry_max_s=0.05,
        failover=FailoverConfig(cooldown_s=cooldown_s),
    )


def prompts(n: int, prefix: str = "sentence") -> list[ChatRequest]:
    return [ask(f"{prefix} {i}") for i in range(n)]


def test_requests_are_spread_over_both_endpoints_with_concurrency_on_each(
    two: tuple[FakeOpenAIServer, FakeOpenAIServer],
) -> None:
    a, b = two
    responses = backend([a.base_url, b.base_url], concurrency=4).generate(prompts(200))

    assert all(r.ok for r in responses)
    assert a.state.total + b.state.total == 200
    assert 60 <= a.state.total <= 140
    assert a.state.max_in_flight == b.state.max_in_flight == 4  # 8 in flight in all


def test_a_killed_endpoint_leaves_the_work_to_the_other_and_no_prompt_is_answered_twice(
    two: tuple[FakeOpenAIServer, FakeOpenAIServer], caplog: pytest.LogCaptureFixture
) -> None:
    a, b = two
    a.stop_at_request(30)
    llm = backend([a.base_url, b.base_url], concurrency=8)

    responses = llm.generate(prompts(300))

    assert [r.error for r in responses if not r.ok] == []
    answered = a.state.answered + b.state.answered
    assert sorted(answered) == sorted(f"sentence {i}" for i in range(300))
    assert set(answered.values()) == {1}
    # a stops within a few requests of its 30th; everything later is b's
    assert sum(b.state.answered.values()) > 240
    assert llm.endpoints.in_service() == [b.base_url]
    assert f"LLM endpoint {a.base_url} out of service for 5 s" in caplog.text


def test_an_endpoint_back_after_its_cool_down_gets_requests_again(
    two: tuple[FakeOpenAIServer, FakeOpenAIServer],
) -> None:
    a, b = two
    llm = backend([a.base_url, b.base_url], concurrency=4, cooldown_s=1.5)
    a.stop()
    assert all(r.ok for r in llm.generate(prompts(40, "first")))
    assert llm.endpoints.in_service() == [b.base_url]
    a.start()  # same port: the endpoint is back

    assert all(r.ok for r in llm.generate(prompts(20, "cooling")))
    assert sum(a.state.answered.values()) == 0  # still in its cool-down
    time.sleep(1.6)
    assert all(r.ok for r in llm.generate(prompts(200, "later")))

    assert llm.endpoints.in_service() == [a.base_url, b.base_url]
    assert sum(a.state.answered.values()) >= 50


def test_every_endpoint_down_fails_with_the_usual_transient_reason(
    two: tuple[FakeOpenAIServer, FakeOpenAIServer],
) -> None:
    a, b = two
    a.stop()
    b.stop()

    def reason(urls: list[str]) -> str:
        llm = OpenAIBackend(
            "fake", {}, name="openai-compatible", base_url=urls, max_retries=2, retry_initial_s=0.01
        )
        [response] = llm.generate([ask("nobody home")])
        assert response.error is not None
        return re.sub(r":\d+", ":PORT", response.error)

    assert reason([a.base_url, b.base_url]) == reason([a.base_url])
    assert reason([a.base_url]).endswith("(gave up after 3 attempts)")


def test_answers_of_one_endpoint_are_cache_hits_when_only_another_is_configured(
    two: tuple[FakeOpenAIServer, FakeOpenAIServer], tmp_path: Path
) -> None:
    a, b = two
    cache = tmp_path / "llm.sqlite"
    requests = prompts(60)
    first = CachedBackend(backend([a.base_url, b.base_url]), cache).generate(requests)
    sent = a.state.total + b.state.total

    with FakeOpenAIServer() as c:
        again = CachedBackend(backend(c.base_url), cache).generate(requests)
        only_b = CachedBackend(backend([b.base_url]), cache).generate(requests)
        assert c.state.total == 0

    assert sent == 60
    assert a.state.total + b.state.total == 60
    assert [r.text for r in again] == [r.text for r in only_b] == [r.text for r in first]
    assert all(r.cached for r in again + only_b)


def test_a_list_of_one_is_the_url_itself() -> None:
    url = "http://127.0.0.1:8000/v1"
    listed = LLMConfig(backend="openai-compatible", model="m", base_url=[url])
    assert listed == LLMConfig(backend="openai-compatible", model="m", base_url=url)
    assert listed.base_url == url
    assert backend([url]).base_urls == backend(url).base_urls == (url,)


@pytest.mark.parametrize(
    ("base_url", "message"),
    [
        (["http://a:8000/v1", "http://a:8000/v1/"], "names http://a:8000/v1/ twice"),
        (["http://a:8000/v1", "http://u:secret@b:8000/v1"], "must not carry credentials"),
        (["http://a:8000/v1", "http://b:8000/v1?api_key=x"], "must not carry credentials"),
        ([], "is an empty list"),
    ],
)
def test_each_endpoint_is_checked_and_none_twice(base_url: list[str], message: str) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        LLMConfig(backend="openai-compatible", model="m", base_url=base_url)
    assert "secret" not in str(caught.value)
    if base_url:  # an empty list: "backend 'openai-compatible' needs llm.base_url"
        with pytest.raises(ConfigError, match=message):
            backend(base_url)


def test_the_batch_api_takes_one_endpoint() -> None:
    with pytest.raises(ValidationError, match="'openai-batch' submits to one endpoint"):
        LLMConfig(
            backend="openai-batch", model="m", base_url=["http://a:8000/v1", "http://b:8000/v1"]
        )


def test_the_list_is_given_on_the_command_line_as_yaml() -> None:
    data = apply_overrides(
        {"backend": "openai-compatible", "model": "m"},
        ["base_url=[http://10.0.0.1:8000/v1, http://10.0.0.2:8000/v1]"],
    )
    assert LLMConfig.model_validate(data).base_url == [
        "http://10.0.0.1:8000/v1",
        "http://10.0.0.2:8000/v1",
    ]
