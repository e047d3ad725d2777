"""Whatever the LLM server sends, a build goes on: each answer is a row or a reject (issue 21).

The fake OpenAI server on 127.0.0.1 sends what a broken or hostile server would: bodies
that are not chat completions (items 1), answers that trickle or are too large or
compressed bombs (item 2), redirects to another origin (item 3). Config-level refusals of a
key in the base URL run the real ``cseaug`` command.
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cseaug.errors import BackendError
from cseaug.llm.base import MALFORMED, TRANSIENT
from cseaug.llm.cache import CachedBackend
from cseaug.llm.openai_backend import OpenAIBackend
from cseaug.llm.probe import probe_endpoints
from cseaug.llm.wire import MAX_TOKEN_COUNT, RedirectRefused, body_limit, parse_completion
from tests.fake_openai_server import Action, FakeOpenAIServer, completion_body
from tests.llm.helpers import ask
from tests.reliability.attack_tools import REPO, RecordingProxy, build_environment, run_cseaug
from tests.reliability.test_llm_faults import SENTENCES, VIEWS, build, config, llm_rejects

pytestmark = pytest.mark.reliability


def completion(**fields: Any) -> bytes:
    """A chat completion body with ``fields`` put over a valid one's (``...``: as JSON text)."""
    body = json.loads(completion_body("hi", "fake"))
    body.update(fields)
    return json.dumps(body).encode()


MALFORMED_BODIES = {
    "lone surrogate in content": completion(
        choices=[{"message": {"role": "assistant", "content": "bad \ud800 text"}}]
    ),
    "usage not an object": completion(usage="lots"),
    "usage a list": completion(usage=[1, 2]),
    "token count 1e999": completion(usage={"prompt_tokens": 1, "completion_tokens": 0}).replace(
        b'"completion_tokens": 0', b'"completion_tokens": 1e999'
    ),
    "token count 10**400": completion(usage={"prompt_tokens": 10**400, "completion_tokens": 1}),
    "token count a string": completion(usage={"prompt_tokens": "3", "completion_tokens": 1}),
    "negative token count": completion(usage={"prompt_tokens": -3, "completion_tokens": 1}),
    "deeply nested body": b"[" * 100_000 + b"]" * 100_000,
    "nested deeper than allowed": completion(extra=json.loads("[" * 200 + "]" * 200)),
    "not UTF-8": b'{"choices": [{"message": {"content": "\xff\xfe"}}]}',
    "a JSON list": b"[1, 2, 3]",
    "empty body": b"",
}


def backend_for(server: FakeOpenAIServer, **options: Any) -> OpenAIBackend:
    settings_ = {"request_timeout_s": 5.0, "max_retries": 0, **options}
    sampling = settings_.pop("sampling", {"max_tokens": 64})
    return OpenAIBackend(
        "fake", sampling, name="openai-compatible", base_url=server.base_url, **settings_
    )


def test_malformed_answers_are_malformed_response_rejects_and_the_build_goes_on(
    tmp_path: Path,
) -> None:
    """Proves 21.1: a lone surrogate in ``content``, a ``usage`` that is no object, token counts
    that are not whole numbers (``1e999``, 10**400, "3", -3), a body nested 100,000 deep, bytes
    that are not UTF-8, a JSON list, an empty body: each prompt that gets one is a reject with
    reason ``malformed_response`` (not retryable) naming what was wrong; the build publishes
    every other row, and its rerun is not stopped by them either."""
    victims = dict(zip(SENTENCES, MALFORMED_BODIES, strict=False))
    with FakeOpenAIServer() as server:
        for sentence, fault in victims.items():
            server.script(sentence, *[Action.raw_body(MALFORMED_BODIES[fault])] * VIEWS)
        cfg = config(tmp_path, server.base_url, circuit_breaker=None, concurrency=4)
        outcomes, summary = build(cfg)
        rejects = llm_rejects(summary)
        for sentence, fault in victims.items():
            mine = [r for r in rejects if r["sentence"] == sentence]
            assert [r["reason"] for r in mine] == [MALFORMED] * VIEWS, fault
            detail = json.loads(mine[0]["detail"])
            assert detail["error"].startswith("malformed response body (") and not detail.get(
                "retryable"
            )
        assert summary.aigen == len(SENTENCES) - len(victims)
        assert outcomes[0].llm["failed"] == len(victims) * VIEWS
        assert outcomes[0].llm["retryable"] == 0


TEXT = st.text(st.characters(categories=["L", "N", "P", "S", "Z", "Cc", "Cs"]), max_size=20)
"""Any text, lone surrogates (category Cs) included."""

ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
"""Any JSON value: text with surrogates, numbers of any size, floats inf / nan included."""

TOKEN_COUNTS = st.one_of(ANY_JSON, st.integers(-5, 5), st.integers(MAX_TOKEN_COUNT - 1, 2**70))
USAGE = st.one_of(
    ANY_JSON,
    st.fixed_dictionaries(
        {}, optional={"prompt_tokens": TOKEN_COUNTS, "completion_tokens": TOKEN_COUNTS}
    ),
)
CHOICE = st.fixed_dictionaries(
    {"message": st.fixed_dictionaries({"content": TEXT | ANY_JSON})},
    optional={"finish_reason": st.sampled_from(["stop", "length"]) | ANY_JSON},
)
ANSWERS = st.fixed_dictionaries(
    {
        "choices": st.builds(
            lambda text: [{"message": {"content": text}}],
            st.text(st.characters(categories=["L", "Cs"]), min_size=1, max_size=4),
        ),
        "usage": st.one_of(
            TEXT,
            st.integers(),
            st.floats(),
            st.lists(st.integers(), max_size=2),
            st.fixed_dictionaries(
                {"prompt_tokens": TOKEN_COUNTS, "completion_tokens": TOKEN_COUNTS}
            ),
        ),
    }
)
"""An answer whose text may hold lone surrogates and whose usage may be anything: what a
server with a bug sends (the HTTP fuzz test's bodies, more hostile than random JSON)."""

COMPLETIONS = st.fixed_dictionaries(
    {"choices": st.one_of(ANY_JSON, st.lists(CHOICE, max_size=2))}, optional={"usage": USAGE}
)
"""Bodies shaped like a chat completion, with any value in each field."""


def json_bytes(value: Any) -> bytes:
    return json.dumps(value).encode()


BODIES = st.one_of(
    st.binary(max_size=300),
    ANSWERS.map(json_bytes),
    COMPLETIONS.map(json_bytes),
    ANY_JSON.map(json_bytes),
)


@settings(
    max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(body=BODIES)
def test_any_response_body_is_a_storable_answer_or_a_malformed_response(body: bytes) -> None:
    """Proves 21.1 (property-based): whatever bytes the body holds, parsing returns a response
    with text or an error (never an exception); an answer has text that encodes to UTF-8 and
    token counts that are whole numbers SQLite and Parquet can store, no more completion
    tokens than were asked for; an error that is not about the answer's text or length is
    ``malformed_response``."""
    response = parse_completion("k", body, max_tokens=64)
    assert response.ok != (response.error is not None)
    if response.ok:
        assert response.text is not None
        response.text.encode("utf-8")
        for count in (response.prompt_tokens, response.completion_tokens):
            assert type(count) is int and 0 <= count <= MAX_TOKEN_COUNT
        assert response.completion_tokens <= 64
    elif not response.error.startswith(("answer has no text", "answer cut at")):
        assert response.failure == MALFORMED


@pytest.fixture(scope="module")
def fuzzed_server() -> Iterator[FakeOpenAIServer]:
    """One server for every example of the HTTP fuzz test (scripts set per example)."""
    with FakeOpenAIServer() as server:
        yield server


@settings(
    max_examples=15, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(bodies=st.lists(st.one_of(ANSWERS.map(json_bytes), BODIES), min_size=4, max_size=8))
def test_any_body_sent_over_http_ends_as_a_stored_answer_or_a_recorded_failure(
    bodies: list[bytes], fuzzed_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Proves 21.1 end to end (property-based): bodies of any bytes, sent by the server over
    HTTP to the cached backend, each end as an answer stored in the cache or a failure
    recorded there, and ``generate`` returns (it raised before on some)."""
    prompts = [f"fuzz {i}" for i in range(len(bodies))]
    for prompt, body in zip(prompts, bodies, strict=True):
        fuzzed_server.script(prompt, Action.raw_body(body))
    backend = CachedBackend(backend_for(fuzzed_server), tmp_path_factory.mktemp("c") / "c.sqlite")
    responses = backend.generate([ask(p) for p in prompts])
    hashes = backend.hashes([ask(p) for p in prompts])
    stored, failed = backend.cache.lookup(hashes)[0], backend.cache.failed_before(hashes)
    for response, digest in zip(responses, hashes, strict=True):
        assert (digest in stored) if response.ok else (digest in failed)
    backend.close()


def test_a_trickling_server_meets_the_request_deadline() -> None:
    """Proves 21.2: a server that sends its answer a byte every 0.05 s (15 s for the body) is
    cut at ``llm.request_timeout_s`` (1 s) of the whole request, not of each read: the request
    fails as timed out (transient: a rerun asks again) after about a second."""
    with FakeOpenAIServer() as server:
        server.script("slow drip", Action.trickle(0.05))
        started = time.monotonic()
        (response,) = backend_for(server, request_timeout_s=1.0).generate([ask("slow drip")])
        elapsed = time.monotonic() - started
    assert not response.ok and response.failure == TRANSIENT
    assert "timed out" in response.error
    assert elapsed < 3.0


@pytest.mark.parametrize("announced", [True, False], ids=["content-length", "chunked"])
def test_an_answer_larger_than_max_tokens_allows_is_refused_and_not_cached(
    tmp_path: Path, announced: bool
) -> None:
    """Proves 21.2: a 1 MB answer to a ``max_tokens: 64`` request (over the 69,632 bytes such
    an answer can take: ``wire.body_limit``), whether its size is announced or not, is a
    ``malformed_response`` and is not stored in the cache; a normal answer still is."""
    big = "word " * 200_000
    with FakeOpenAIServer() as server:
        action = Action.answer(big) if announced else Action.trickle(0.0, 65_536, big)
        server.script("big", action)
        backend = CachedBackend(backend_for(server), tmp_path / "llm.sqlite")
        big_answer, fine = backend.generate([ask("big"), ask("fine")])
    assert big_answer.failure == MALFORMED and str(body_limit(64)) in big_answer.error
    assert fine.ok and len(backend.cache) == 1


def test_a_compression_bomb_is_refused_without_being_inflated() -> None:
    """Proves 21.2: a 300 KB gzip body that inflates to 300 MB is refused as a
    ``malformed_response`` (cseaug asks for an uncompressed body and never inflates one): the
    process's peak memory grows by far less than the bomb (it grew by 880 MB before)."""
    bomb = Action.gzip_bomb(300_000_000)
    with FakeOpenAIServer() as server:
        server.script("bomb", bomb)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        (response,) = backend_for(server).generate([ask("bomb")])
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert response.failure == MALFORMED and "compressed with 'gzip'" in response.error
    assert grown_mb < 100


def test_a_redirect_to_another_origin_ends_generation_and_sends_it_nothing() -> None:
    """Proves 21.3: a 307 or 308 from the endpoint to another origin is refused with one line
    naming both origins; the other server receives no prompt (it did before: it got every
    prompt and wrote the answers)."""
    with FakeOpenAIServer() as endpoint, FakeOpenAIServer() as elsewhere:
        for status in (307, 308):
            endpoint.script(
                "hello", Action.redirect(status, f"{elsewhere.base_url}/chat/completions")
            )
            with pytest.raises(RedirectRefused, match=f"HTTP {status}") as refused:
                backend_for(endpoint).generate([ask("hello")])
            assert f"127.0.0.1:{elsewhere.port}" in str(refused.value)
            assert "\n" not in str(refused.value)
        assert elsewhere.state.total == 0


def test_a_redirect_within_the_endpoint_is_followed() -> None:
    """Proves 21.3 keeps what works: a redirect to the endpoint's own origin is followed."""
    with FakeOpenAIServer() as endpoint:
        endpoint.script("hello", Action.redirect(307, f"{endpoint.base_url}/chat/completions"))
        (response,) = backend_for(endpoint).generate([ask("hello")])
    assert response.ok and endpoint.counts["hello"] == 2


def test_the_endpoint_probe_refuses_a_redirect_to_another_origin() -> None:
    """Proves 21.3 before any work: the up-front probe (here its one-token request, the server
    having no model list) refuses the redirect, and the other origin receives nothing."""
    with FakeOpenAIServer() as elsewhere, FakeOpenAIServer(models=None) as endpoint:
        target = f"{elsewhere.base_url}/chat/completions"
        endpoint.state.policy = lambda body: Action.redirect(307, target)
        with pytest.raises(BackendError, match="redirected the request to another origin"):
            probe_endpoints([endpoint.base_url], "EMPTY", "fake", timeout_s=5)
        assert elsewhere.state.total == 0


KEY = "sk-proj-Zq8v0ExampleKey4f9w2L"


@pytest.mark.parametrize(
    "url",
    [
        f"http://127.0.0.1:9/v1/{KEY}",
        "http://127.0.0.1:9/v1#api_key=Zq8v0ExampleKey4f9",
        "http://127.0.0.1:9/token=Zq8v0ExampleKey4f9/v1",
    ],
    ids=["key-shaped path segment", "fragment", "secret-named path part"],
)
def test_a_key_in_the_base_url_path_or_fragment_fails_in_one_line_and_stores_nothing(
    tmp_path: Path, url: str
) -> None:
    """Proves 21.3: a key-looking token in the base URL's path or fragment is refused like one
    in its query string: exit status 2, one line that says the key belongs in an environment
    variable and does not repeat it, and nothing (run store, manifest, plan, Prefect database)
    is written where it would have been stored."""
    with RecordingProxy() as proxy:
        env = build_environment(tmp_path / "prefect-home", proxy)
        args = ["build", "--config", str(REPO / "configs" / "demo.yaml")]
        args += ["--set", f"corpus.path={REPO / 'examples' / 'demo_corpus.txt'}"]
        args += ["--set", "llm.backend=openai-compatible", "--set", "llm.model=m"]
        args += ["--set", f"llm.base_url={url}", "--set", f"output.root={tmp_path / 'storage'}"]
        done = run_cseaug(args, env, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "key-looking token" in lines[0], done.stderr
    assert "Zq8v0ExampleKey4f9" not in done.stdout + done.stderr
    assert not (tmp_path / "storage").exists() and not (tmp_path / "prefect-home").exists()


def test_an_error_whose_message_is_not_valid_unicode_is_recorded(tmp_path: Path) -> None:
    """Proves 21.1 for error answers: a 400 (permanent) and a 500 (transient) whose message
    holds a lone surrogate are recorded as failures, in the cache's failure records too,
    with the surrogate replaced (it could not be written to SQLite or Parquet)."""
    body = json.dumps({"error": {"message": "bad \ud800 request"}}).encode()
    with FakeOpenAIServer() as server:
        server.script("four", Action.raw_body(body, status=400))
        server.script("five", Action.raw_body(body, status=500))
        backend = CachedBackend(backend_for(server), tmp_path / "llm.sqlite")
        four, five = backend.generate([ask("four"), ask("five")])
    assert four.error == "HTTP 400: bad ? request" and five.error.startswith("HTTP 500: bad ?")
    assert len(backend.cache.failed_before(backend.hashes([ask("four"), ask("five")]))) == 2


def test_a_redirect_to_something_that_is_not_a_url_is_a_malformed_response() -> None:
    """Proves 21.1 for redirects: a 307 whose Location is not a URL is the prompt's
    ``malformed_response``, not a crash."""
    with FakeOpenAIServer() as endpoint:
        endpoint.script("hello", Action.redirect(307, "http://[::1"))
        (response,) = backend_for(endpoint).generate([ask("hello")])
    assert response.failure == MALFORMED and "not a URL" in response.error
