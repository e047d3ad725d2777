"""The cache key identifies the model, not only its name (issue 8.8)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from cseaug.config import LLMConfig
from cseaug.llm.cache import request_hash
from cseaug.llm.factory import make_backend
from cseaug.llm.identity import checkpoint_fingerprint
from tests.fake_openai_server import FakeOpenAIServer
from tests.llm.helpers import ask

QUESTIONS = [f"question {i}" for i in range(6)]


def served(root: str) -> list[dict]:
    return [{"id": "fake", "object": "model", "created": 1, "owned_by": "vllm", "root": root}]


def build_requests(base_url: str, cache: Path, **llm) -> list[str]:
    cfg = LLMConfig(backend="openai-compatible", model="fake", base_url=base_url, **llm)
    backend = make_backend(cfg, cache)
    backend.check()
    texts = [r.text for r in backend.generate([ask(q) for q in QUESTIONS])]
    backend.close()
    return texts


def test_another_server_under_the_same_model_name_gets_every_request(tmp_path: Path) -> None:
    """Server X, then server Y (other weights, same model name) in one root: Y gets every
    request and no answer of X is reused."""
    cache = tmp_path / "llm.sqlite"
    with FakeOpenAIServer(models=served("/ckpt/x")) as x:
        build_requests(x.base_url, cache)
        assert x.state.total == len(QUESTIONS)
    with FakeOpenAIServer(models=served("/ckpt/y")) as y:
        build_requests(y.base_url, cache)
        assert y.state.total == len(QUESTIONS)
    # the same weights on a new port reuse every answer
    with FakeOpenAIServer(models=served("/ckpt/y")) as y_again:
        build_requests(y_again.base_url, cache)
        assert y_again.state.total == 0


def test_the_created_time_vllm_reports_does_not_change_the_identity(tmp_path: Path) -> None:
    cache = tmp_path / "llm.sqlite"
    with FakeOpenAIServer(models=served("/ckpt/x")) as first:
        build_requests(first.base_url, cache)
    moved = [{**served("/ckpt/x")[0], "created": 999}]
    with FakeOpenAIServer(models=moved) as second:
        build_requests(second.base_url, cache)
        assert second.state.total == 0


def test_a_configured_model_revision_is_part_of_the_key(tmp_path: Path) -> None:
    cache = tmp_path / "llm.sqlite"
    with FakeOpenAIServer(models=None) as server:  # a server that says nothing about its model
        build_requests(server.base_url, cache, model_revision="2024-05")
        build_requests(server.base_url, cache, model_revision="2024-09")
        assert server.state.total == 2 * len(QUESTIONS) + 2  # + one probe each


def test_dtype_and_answer_changing_engine_args_change_the_key_speed_settings_do_not() -> None:
    def key(**options) -> str:
        backend = make_backend(LLMConfig(backend="vllm", model="org/model", **options), None)
        return request_hash(backend.identity(), ask("q"))  # no engine is started for it

    base = key()
    assert key(dtype="bfloat16") != base
    assert key(engine_kwargs={"quantization": "awq"}) != base
    assert key(engine_kwargs={"max_num_seqs": 8, "gpu_memory_utilization": 0.5}) == base
    assert key(vllm={"max_num_seqs": 8, "enable_prefix_caching": False}) == base


def test_a_checkpoint_replaced_at_the_same_path_is_a_new_model(tmp_path: Path) -> None:
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text('{"hidden_size": 8}')
    (checkpoint / "model.safetensors").write_bytes(b"\x01" * 3_000_000)
    cfg = LLMConfig(backend="transformers", model=str(checkpoint))
    before = request_hash(make_backend(cfg, None).identity(), ask("q"))
    (checkpoint / "model.safetensors").write_bytes(b"\x01" * 2_999_999 + b"\x02")
    after = request_hash(make_backend(cfg, None).identity(), ask("q"))
    assert before != after
    assert checkpoint_fingerprint("org/not-a-directory") is None


def test_a_gguf_file_replaced_at_the_same_path_is_a_new_model(tmp_path: Path) -> None:
    gguf = tmp_path / "model.Q4_1.gguf"
    gguf.write_bytes(b"GGUF" + b"\x01" * 3_000_000)
    cfg = LLMConfig(backend="transformers", model=str(gguf))
    before = request_hash(make_backend(cfg, None).identity(), ask("q"))
    gguf.write_bytes(b"GGUF" + b"\x01" * 2_999_999 + b"\x02")
    assert request_hash(make_backend(cfg, None).identity(), ask("q")) != before


@pytest.mark.parametrize("temperature", [5, 2.5, -0.1])
def test_a_temperature_the_api_rejects_fails_validation(temperature: float) -> None:
    with pytest.raises(ValidationError, match="temperature"):
        LLMConfig(backend="openai", model="m", temperature=temperature)
    LLMConfig(backend="openai", model="m", temperature=2)
