"""The vllm backend with only the engine object faked (vLLM itself needs CUDA)."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
from pathlib import Path
from typing import Any

import pytest

from cseaug.config import VLLMEngineConfig
from cseaug.errors import BackendError, MissingExtraError
from cseaug.llm import vllm_backend
from cseaug.llm.vllm_backend import VLLMBackend
from tests.llm.fake_vllm_engine import FakeSamplingParams, FakeVLLMEngine
from tests.llm.helpers import ask


def backend_with(
    fake: FakeVLLMEngine, sampling: dict | None = None, **options: Any
) -> tuple[VLLMBackend, list[dict[str, Any]]]:
    """A backend whose engine factory returns ``fake`` and records the arguments it got."""
    created: list[dict[str, Any]] = []

    def factory(**kwargs: Any) -> FakeVLLMEngine:
        created.append(kwargs)
        return fake

    backend = VLLMBackend(
        "some/model", sampling or {"max_tokens": 40}, engine_factory=factory, **options
    )
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
    assert len(created) == 1


def test_engine_is_created_lazily_once_and_by_check() -> None:
    backend, created = backend_with(FakeVLLMEngine())
    assert created == []
    backend.check()
    backend.generate([ask("a")])
    backend.generate([ask("b")])
    assert len(created) == 1


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


def test_stop_sequences_go_to_the_requests_that_carry_them() -> None:
    engine = FakeVLLMEngine()
    backend, _ = backend_with(engine)
    backend.generate([ask("x", stop=("\n",)), ask("y")])
    params = engine.calls[0][1]
    assert [p.stop for p in params] == [["\n"], None]


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


def test_the_engine_starts_with_the_defaults_for_this_workload(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vllm_backend, "model_context_length", lambda model: 32768)
    backend, created = backend_with(FakeVLLMEngine(), {"max_tokens": 64}, dtype="bfloat16")
    backend.check()
    assert created == [
        {
            "model": "some/model",
            "dtype": "bfloat16",
            "enable_prefix_caching": True,
            "enable_chunked_prefill": True,
            "max_num_seqs": 512,
            "max_model_len": 64 + 2048,
            "gpu_memory_utilization": 0.9,
            "tensor_parallel_size": 1,
        }
    ]


def test_max_model_len_fits_the_model_and_engine_kwargs_come_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vllm_backend, "model_context_length", lambda model: 1024)
    backend, created = backend_with(
        FakeVLLMEngine(),
        engine=VLLMEngineConfig(max_num_seqs=64, tensor_parallel_size=2),
        engine_kwargs={"enforce_eager": True, "max_num_seqs": 32},
    )
    backend.check()
    assert created[0]["max_model_len"] == 1024  # the model's context, not 40 + 2,048
    assert (created[0]["max_num_seqs"], created[0]["tensor_parallel_size"]) == (32, 2)
    assert created[0]["enforce_eager"] is True
    fixed, created = backend_with(FakeVLLMEngine(), engine=VLLMEngineConfig(max_model_len=512))
    fixed.check()
    assert created[0]["max_model_len"] == 512


def test_the_context_length_is_read_from_the_model_config(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from transformers import GPT2Config

    GPT2Config(n_positions=777).save_pretrained(tmp_path)
    assert vllm_backend.model_context_length(str(tmp_path)) == 777
    assert vllm_backend.model_context_length(str(tmp_path / "absent")) is None


def test_an_engine_that_cannot_start_names_the_settings_and_hides_tokens() -> None:
    def failing(**kwargs: Any) -> None:
        raise RuntimeError("CUDA out of memory while profiling")

    backend = VLLMBackend(
        "some/model",
        {"max_tokens": 8},
        engine=VLLMEngineConfig(max_model_len=512),
        engine_kwargs={"hf_token": "hf_secretvalue123"},
        engine_factory=failing,
    )
    with pytest.raises(BackendError) as error:
        backend.check()
    message = str(error.value)
    assert "CUDA out of memory" in message and "llm.vllm" in message
    assert "hf_secretvalue123" not in message


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vllm (a CUDA machine)")
def test_the_fake_matches_the_real_vllm_api() -> None:
    """What the backend and the fake rely on, checked against the installed vLLM."""
    import vllm
    from vllm.outputs import CompletionOutput, RequestOutput

    chat = inspect.signature(vllm.LLM.chat).parameters
    assert {"messages", "sampling_params", "use_tqdm"} <= set(chat)
    assert hasattr(vllm.LLM, "get_default_sampling_params")
    engine_fields = {f.name for f in dataclasses.fields(vllm.EngineArgs)}
    arguments = vllm_backend.engine_arguments(VLLMEngineConfig(), "auto", 64, {}, None)
    assert set(arguments) <= engine_fields
    params = vllm.SamplingParams()
    for name in ("temperature", "top_p", "max_tokens", "seed", "stop"):
        assert hasattr(params, name)
    request_fields = set(inspect.signature(RequestOutput).parameters)
    assert {"request_id", "prompt", "prompt_token_ids", "outputs", "finished"} <= request_fields
    completion_fields = set(inspect.signature(CompletionOutput).parameters)
    assert {"index", "text", "token_ids", "finish_reason"} <= completion_fields
