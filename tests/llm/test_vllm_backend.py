"""The vllm backend with only the engine object faked (vLLM itself needs CUDA)."""

from __future__ import annotations

import importlib.util

import pytest

from cseaug.errors import MissingExtraError
from cseaug.llm.vllm_backend import VLLMBackend
from tests.llm.fake_vllm_engine import FakeSamplingParams, FakeVLLMEngine
from tests.llm.helpers import ask


def backend_with(
    engine: FakeVLLMEngine, sampling: dict | None = None
) -> tuple[VLLMBackend, list[int]]:
    created: list[int] = []

    def factory() -> FakeVLLMEngine:
        created.append(1)
        return engine

    backend = VLLMBackend("some/model", sampling or {"max_tokens": 40}, engine_factory=factory)
    return backend, created


def test_one_chat_call_for_the_whole_batch_in_order() -> None:
    engine = FakeVLLMEngine()
    backend, created = backend_with(engine)
    requests = [ask(f"sentence number {i}") for i in range(25)]
    done: list[int] = []

    responses = backend.generate(requests, progress=done.append)

    assert len(engine.calls) == 1
    conversations, params = engine.calls[0]
    assert conversations == [list(r.messages) for r in requests]
    assert isinstance(params, FakeSamplingParams) and params.max_tokens == 40
    assert [r.text for r in responses] == [f"echo: sentence number {i}" for i in range(25)]
    # prompt: "Be brief." (2 words) + "sentence number i" (3 words); answer: 4 words
    assert {(r.prompt_tokens, r.completion_tokens) for r in responses} == {(5, 4)}
    assert backend.usage.prompt_tokens == 125 and backend.usage.completion_tokens == 100
    assert sum(done) == 25
    assert created == [1]


def test_engine_is_created_lazily_once_and_by_check() -> None:
    backend, created = backend_with(FakeVLLMEngine())
    assert created == []
    backend.check()
    backend.generate([ask("a")])
    backend.generate([ask("b")])
    assert created == [1]


def test_sampling_overrides_defaults_and_seeds_follow_the_sample_index() -> None:
    engine = FakeVLLMEngine()
    backend, _ = backend_with(
        engine, {"temperature": 0.0, "top_p": None, "max_tokens": 12, "seed": 5}
    )
    backend.generate([ask("x", sample_index=0), ask("x", key="x2", sample_index=1), ask("y")])
    params = engine.calls[0][1]
    assert isinstance(params, list) and len(params) == 3
    assert [p.seed for p in params] == [5, 6, 5]
    assert {(p.temperature, p.top_p, p.max_tokens) for p in params} == {(0.0, 1.0, 12)}


def test_an_invalid_prompt_fails_alone() -> None:
    engine = FakeVLLMEngine(reject={"too long"})
    backend, _ = backend_with(engine)
    requests = (
        [ask(f"s{i}") for i in range(7)] + [ask("too long")] + [ask(f"t{i}") for i in range(4)]
    )
    responses = backend.generate(requests)
    failed = [r.key for r in responses if not r.ok]
    assert failed == ["too long"]
    assert "longer than the maximum model length" in responses[7].error
    assert [r.text for r in responses if r.ok] == [
        f"echo: {r.key}" for r in requests if r.key != "too long"
    ]


def test_an_engine_failure_fails_the_batch_not_the_run() -> None:
    backend, _ = backend_with(
        FakeVLLMEngine(fail_with=RuntimeError("CUDA error: device-side assert"))
    )
    responses = backend.generate([ask("a"), ask("b")])
    assert all(not r.ok and "CUDA error" in r.error for r in responses)
    assert backend.usage.failed == 2


def test_aborted_requests_are_errors() -> None:
    backend, _ = backend_with(FakeVLLMEngine(abort={"b"}))
    assert [r.ok for r in backend.generate([ask("a"), ask("b")])] == [True, False]


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed")
def test_missing_vllm_names_the_extra() -> None:
    backend = VLLMBackend("some/model", {})
    with pytest.raises(MissingExtraError, match=r"cseaug\[vllm\]"):
        backend.check()
