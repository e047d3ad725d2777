"""check() of the HTTP backends probes the endpoint before any work (issue 8.1).

Each failure is one line that names the URL and the cause; the fake server on 127.0.0.1
answers ``GET /v1/models`` like ``vllm serve`` does, or has no list (the one-token fallback).
"""

from __future__ import annotations

import pytest

from cseaug.errors import BackendError
from cseaug.llm.openai_backend import OpenAIBackend
from tests.fake_openai_server import Action, FakeOpenAIServer


def http_backend(base_url: str, model: str = "fake") -> OpenAIBackend:
    return OpenAIBackend(model, {}, name="openai-compatible", base_url=base_url)


def test_a_dead_endpoint_fails_check_naming_the_url_and_connection_refused() -> None:
    with FakeOpenAIServer() as stopped:
        url = stopped.base_url
    with pytest.raises(BackendError) as err:
        http_backend(url).check()
    message = str(err.value)
    assert "\n" not in message
    assert url in message and "connection refused" in message


def test_a_served_model_passes_and_its_entry_is_kept(server: FakeOpenAIServer) -> None:
    backend = http_backend(server.base_url)
    backend.check()
    assert backend.served()["root"] == "fake"
    assert server.state.model_requests == 1 and server.state.total == 0  # no chat request
    backend.identity()
    assert server.state.model_requests == 1  # probed once


def test_a_model_the_server_does_not_list_fails_with_what_it_serves(
    server: FakeOpenAIServer,
) -> None:
    with pytest.raises(
        BackendError, match=r"model 'other' not served \(it serves: fake, fake-model, golden\)"
    ):
        http_backend(server.base_url, "other").check()


def test_a_refused_key_is_named() -> None:
    with FakeOpenAIServer() as server:
        server.state.models = None  # no list: the one-token request meets the 401
        server.script("ping", Action.unauthorized_echo())
        with pytest.raises(BackendError, match="refused the API key") as err:
            http_backend(server.base_url).check()
    assert server.base_url in str(err.value) and "HTTP 401" in str(err.value)


def test_without_a_model_list_one_token_is_asked() -> None:
    with FakeOpenAIServer(models=None) as server:
        http_backend(server.base_url).check()
        assert server.counts["ping"] == 1
        assert server.state.last_body["ping"]["max_tokens"] == 1


def test_without_a_model_list_a_404_says_model_not_served() -> None:
    with (
        FakeOpenAIServer(models=None, serves={"fake"}) as server,
        pytest.raises(BackendError, match="model 'other' not served") as err,
    ):
        http_backend(server.base_url, "other").check()
    assert "HTTP 404" in str(err.value)


def test_of_several_endpoints_one_that_answers_is_enough(server: FakeOpenAIServer) -> None:
    with FakeOpenAIServer() as stopped:
        dead = stopped.base_url
    backend = OpenAIBackend("fake", {}, name="openai-compatible", base_url=[dead, server.base_url])
    backend.check()
    assert backend.served()["id"] == "fake"


def test_several_endpoints_all_down_fail_in_one_line_naming_each() -> None:
    with FakeOpenAIServer() as first, FakeOpenAIServer() as second:
        urls = [first.base_url, second.base_url]
    backend = OpenAIBackend("fake", {}, name="openai-compatible", base_url=urls)
    with pytest.raises(BackendError, match=r"no endpoint of llm\.base_url can answer") as err:
        backend.check()
    assert "\n" not in str(err.value) and all(url in str(err.value) for url in urls)


def test_endpoints_serving_other_weights_under_one_name_are_refused() -> None:
    entry = {"id": "fake", "object": "model", "owned_by": "vllm"}
    with (
        FakeOpenAIServer(models=[{**entry, "root": "/ckpt/a"}]) as a,
        FakeOpenAIServer(models=[{**entry, "root": "/ckpt/b"}]) as b,
    ):
        backend = OpenAIBackend(
            "fake", {}, name="openai-compatible", base_url=[a.base_url, b.base_url]
        )
        with pytest.raises(BackendError, match="serve different weights as 'fake'"):
            backend.check()


@pytest.mark.parametrize(
    ("listing", "said"), [({"models": []}, "lists no models"), ({"models_status": 500}, "HTTP 500")]
)
def test_an_empty_or_failing_model_list_is_probed_with_one_chat_request(
    listing: dict, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    # `transformers serve <folder>` lists nothing, or fails with a 500 without a hub cache
    with FakeOpenAIServer(**{k: v for k, v in listing.items() if k == "models"}) as server:
        server.state.models_status = listing.get("models_status")
        backend = http_backend(server.base_url, "/models/SmolLM2")
        backend.check()
        assert server.counts["ping"] == 1 and backend.served() == {}
    lines = [r.getMessage() for r in caplog.records if "GET /models" in r.getMessage()]
    assert len(lines) == 1 and said in lines[0] and "'/models/SmolLM2' was answered" in lines[0]


def test_an_empty_model_list_and_a_chat_request_that_fails_is_refused() -> None:
    with (
        FakeOpenAIServer(models=[], serves={"fake"}) as server,
        pytest.raises(BackendError, match="model 'other' not served") as err,
    ):
        http_backend(server.base_url, "other").check()
    assert "HTTP 404" in str(err.value) and "\n" not in str(err.value)
