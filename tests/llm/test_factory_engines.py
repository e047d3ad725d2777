"""``llm.backend: auto`` and the engine settings the factory hands to the in-process engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.config import LLMConfig
from cseaug.llm import factory
from cseaug.llm.cache import CachedBackend
from cseaug.llm.factory import make_backend, resolve_backend
from cseaug.llm.transformers_backend import TransformersBackend
from cseaug.llm.vllm_backend import VLLMBackend


def machine(monkeypatch: pytest.MonkeyPatch, *, vllm: bool, gpu: bool) -> None:
    """Pretend the vllm package is (not) installed and a GPU is (not) visible."""
    real = factory.importlib.util.find_spec
    monkeypatch.setattr(
        factory.importlib.util,
        "find_spec",
        lambda name, *a: (real("json") if vllm else None) if name == "vllm" else real(name, *a),
    )
    monkeypatch.setattr(factory, "cuda_visible", lambda: gpu)


@pytest.mark.parametrize(
    ("vllm", "gpu", "expected"),
    [(True, True, "vllm"), (True, False, "transformers"), (False, True, "transformers")],
)
def test_auto_is_vllm_only_with_vllm_installed_and_a_gpu_visible(
    monkeypatch: pytest.MonkeyPatch, vllm: bool, gpu: bool, expected: str
) -> None:
    machine(monkeypatch, vllm=vllm, gpu=gpu)
    assert resolve_backend("auto") == expected
    backend = make_backend(LLMConfig(backend="auto", model="org/model"), None)
    assert backend.name == expected  # the cache key names the engine, never "auto"
    assert backend.identity()["backend"] == expected


def test_an_explicit_backend_is_used_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    machine(monkeypatch, vllm=True, gpu=True)
    backend = make_backend(LLMConfig(backend="transformers", model="org/model"), None)
    assert isinstance(backend, TransformersBackend)
    assert backend.batch_size == "auto"


def test_vllm_gets_its_engine_settings_and_the_cache_its_calls(tmp_path: Path) -> None:
    cfg = LLMConfig(
        backend="vllm",
        model="org/model",
        dtype="bfloat16",
        engine_kwargs={"enforce_eager": True},
        vllm={"max_num_seqs": 128, "requests_per_call": 3000},
    )
    plain = make_backend(cfg, None)
    assert isinstance(plain, VLLMBackend)
    assert plain.engine_settings.max_num_seqs == 128
    assert (plain.dtype, plain.engine_kwargs) == ("bfloat16", {"enforce_eager": True})
    cached = make_backend(cfg, tmp_path / "llm.sqlite")
    assert isinstance(cached, CachedBackend) and isinstance(cached.inner, VLLMBackend)
    assert cached.inner.engine_settings.requests_per_call == 3000
    cached.close()
