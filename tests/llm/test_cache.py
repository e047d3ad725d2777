"""The response cache: never pay twice, store as answers arrive, survive kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cseaug.config import LLMConfig, VLLMEngineConfig
from cseaug.llm.base import ChatResponse
from cseaug.llm.cache import CachedBackend, ResponseCache, request_hash
from cseaug.llm.factory import make_backend
from cseaug.llm.openai_backend import OpenAIBackend
from cseaug.llm.vllm_backend import VLLMBackend
from tests.fake_openai_server import Action, FakeOpenAIServer
from tests.llm.fake_vllm_engine import FakeVLLMEngine
from tests.llm.helpers import ask

REPO = Path(__file__).resolve().parents[2]


def cached_http(server: FakeOpenAIServer, path: Path, **sampling) -> CachedBackend:
    inner = OpenAIBackend(
        "fake",
        {"max_tokens": 16, **sampling},
        name="openai-compatible",
        base_url=server.base_url,
        concurrency=4,
        retry_initial_s=0.01,
    )
    return CachedBackend(inner, path)


def test_a_second_run_sends_nothing(server: FakeOpenAIServer, tmp_path: Path) -> None:
    requests = [ask(f"s{i}") for i in range(20)]
    first = cached_http(server, tmp_path / "llm.sqlite").generate(requests)
    assert server.state.total == 20

    again = cached_http(server, tmp_path / "llm.sqlite")
    done: list[int] = []
    second = again.generate(requests, progress=done.append)

    assert server.state.total == 20
    assert [r.text for r in second] == [r.text for r in first]
    assert [(r.prompt_tokens, r.completion_tokens) for r in second] == [
        (r.prompt_tokens, r.completion_tokens) for r in first
    ]
    assert all(r.cached for r in second) and not any(r.cached for r in first)
    assert again.usage.as_dict() == {
        "requests": 0,
        "failed": 0,
        "retried": 0,
        "cached": 20,
        "circuit_open": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "answered_by:fake": 20,  # the cached answers keep the model that answered them
    }
    assert sum(done) == 20


def test_only_misses_are_sent(server: FakeOpenAIServer, tmp_path: Path) -> None:
    backend = cached_http(server, tmp_path / "llm.sqlite")
    backend.generate([ask("a"), ask("b")])
    responses = backend.generate([ask("a"), ask("c"), ask("b"), ask("d")])
    assert [r.cached for r in responses] == [True, False, True, False]
    assert [r.text for r in responses] == ["echo: a", "echo: c", "echo: b", "echo: d"]
    assert dict(server.counts) == {"a": 1, "b": 1, "c": 1, "d": 1}


def test_failed_answers_are_not_cached(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.script("refused", Action.status_code(400))
    backend = cached_http(server, tmp_path / "llm.sqlite")
    assert [r.ok for r in backend.generate([ask("refused"), ask("fine")])] == [False, True]
    assert len(backend.cache) == 1
    # the next run asks again (and this time the server answers)
    assert [r.ok for r in backend.generate([ask("refused"), ask("fine")])] == [True, True]
    assert server.counts["refused"] == 2 and server.counts["fine"] == 1


def test_repeats_within_a_batch_are_sent_once(server: FakeOpenAIServer, tmp_path: Path) -> None:
    backend = cached_http(server, tmp_path / "llm.sqlite")
    responses = backend.generate([ask("same", key="k1"), ask("other"), ask("same", key="k2")])
    assert server.counts["same"] == 1
    assert [r.key for r in responses] == ["k1", "other", "k2"]
    assert responses[2].text == responses[0].text and responses[2].cached
    assert backend.usage.requests == 2 and backend.usage.cached == 1


def test_each_answer_reaches_on_response_as_it_exists_stored_sent_and_repeated(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    backend = cached_http(server, tmp_path / "llm.sqlite")
    backend.generate([ask("stored")])
    seen: list[tuple[int, str, bool, int]] = []  # (index, key, cached, requests received)
    requests = [ask("stored"), ask("fresh", key="k1"), ask("fresh", key="k2")]

    responses = backend.generate(
        requests,
        on_response=lambda i, r: seen.append((i, r.key, r.cached, server.state.total)),
    )

    # the stored answer before anything was sent; the sent one for both of its requests
    assert seen[0] == (0, "stored", True, 1)
    assert sorted(seen[1:]) == [(1, "k1", False, 2), (2, "k2", True, 2)]
    assert [r.key for r in responses] == ["stored", "k1", "k2"]


def test_key_covers_sampling_model_sample_index_and_stop(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    path = tmp_path / "llm.sqlite"
    cached_http(server, path, temperature=0.0).generate([ask("q")])
    cached_http(server, path, temperature=0.0).generate([ask("q", key="other row")])
    assert server.counts["q"] == 1  # the row key is not part of the cache key
    cached_http(server, path, temperature=0.5).generate([ask("q")])
    cached_http(server, path, temperature=0.0).generate([ask("q", sample_index=1)])
    assert server.counts["q"] == 3
    cached_http(server, path, temperature=0.0).generate([ask("q", stop=("\n",))])
    assert server.counts["q"] == 4
    identity = {"backend": "openai-compatible", "model": "fake", "sampling": {"max_tokens": 16}}
    assert request_hash(identity, ask("q")) != request_hash(
        {**identity, "model": "other"}, ask("q")
    )


def test_database_is_in_wal_mode(tmp_path: Path) -> None:
    ResponseCache(tmp_path / "c" / "llm.sqlite").close()
    mode = (
        sqlite3.connect(tmp_path / "c" / "llm.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    )
    assert mode == "wal"


def test_refuses_to_store_a_failure(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    with pytest.raises(ValueError, match="failed answer"):
        cache.put("h", ChatResponse(key="k", error="HTTP 500"))


class Crash(BaseException):
    """Stands for the process dying: not an Exception, so nothing on the way catches it."""


def test_vllm_answers_are_stored_call_by_call(tmp_path: Path) -> None:
    class CrashingEngine(FakeVLLMEngine):
        def chat(self, messages, sampling_params=None, use_tqdm=True, **kwargs):
            if len(self.calls) == 2:
                raise Crash()
            return super().chat(messages, sampling_params, use_tqdm, **kwargs)

    engine = CrashingEngine()
    calls_of_3 = VLLMEngineConfig(requests_per_call=3)
    backend = CachedBackend(
        VLLMBackend("m", {}, engine=calls_of_3, engine_factory=lambda **kwargs: engine),
        tmp_path / "llm.sqlite",
    )
    requests = [ask(f"s{i}") for i in range(8)]
    with pytest.raises(Crash):
        backend.generate(requests)
    assert len(backend.cache) == 6  # the two calls that returned before the crash

    engine = FakeVLLMEngine()
    resumed = CachedBackend(
        VLLMBackend("m", {}, engine_factory=lambda **kwargs: engine), tmp_path / "llm.sqlite"
    )
    responses = resumed.generate(requests)
    assert [r.cached for r in responses] == [True] * 6 + [False] * 2
    assert [len(call[0]) for call in engine.calls] == [2]


def test_make_backend_wraps_in_the_cache(server: FakeOpenAIServer, tmp_path: Path) -> None:
    cfg = LLMConfig(backend="openai-compatible", model="fake", base_url=server.base_url)
    cached = make_backend(cfg, tmp_path / "llm.sqlite")
    assert isinstance(cached, CachedBackend) and cached.name == "openai-compatible"
    assert cached.identity() == make_backend(cfg, None).identity()


@pytest.mark.slow
def test_kill_9_midway_then_resume_pays_at_most_the_in_flight_requests(tmp_path: Path) -> None:
    n, concurrency = 400, 8  # concurrency as in cache_build_client.py
    cache_path, out = tmp_path / "llm.sqlite", tmp_path / "answers.json"
    client = [sys.executable, str(REPO / "tests" / "llm" / "cache_build_client.py")]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    with FakeOpenAIServer(latency_s=0.02) as server:
        args = [server.base_url, str(cache_path), str(n), str(out)]
        process = subprocess.Popen([*client, *args], env=env)
        deadline = time.monotonic() + 60
        while (
            server.state.total < n // 3 and time.monotonic() < deadline and process.poll() is None
        ):
            time.sleep(0.01)
        assert process.poll() is None, "the build finished before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        sent_before_kill = server.state.total
        assert n // 3 <= sent_before_kill < n
        assert not out.exists()

        subprocess.run([*client, *args], env=env, check=True, timeout=120)

        answers = json.loads(out.read_text())
        assert answers == {f"q{i}": f"echo: question {i}" for i in range(n)}
        counts = [server.counts[f"question {i}"] for i in range(n)]
        assert min(counts) == 1 and max(counts) <= 2
        # only requests in flight when the process died can have been paid twice
        assert sum(counts) - n <= concurrency

        total = server.state.total
        subprocess.run([*client, *args], env=env, check=True, timeout=120)
        assert server.state.total == total  # a third run sends nothing
