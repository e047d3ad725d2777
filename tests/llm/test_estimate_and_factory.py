"""The dry-run estimate and the backend factory."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.config import LLMConfig
from cseaug.errors import BackendError
from cseaug.llm.cache import CachedBackend
from cseaug.llm.estimate import cached_answers, estimate, heuristic_tokens
from cseaug.llm.factory import make_backend
from cseaug.llm.openai_backend import OpenAIBackend
from cseaug.llm.transformers_backend import TransformersBackend
from cseaug.llm.vllm_backend import VLLMBackend
from tests.fake_openai_server import FakeOpenAIServer
from tests.llm.helpers import ask


def test_heuristic_counts_four_characters_per_token_plus_framing() -> None:
    request = ask("x" * 40)  # system "Be brief." (9 chars -> 3) + 40 chars -> 10
    assert heuristic_tokens(request) == 3 + 10 + 2 * 4 + 3


def test_estimate_with_the_heuristic_and_the_cache(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    cfg = LLMConfig(
        backend="openai-compatible", model="fake", base_url=server.base_url, max_tokens=50
    )
    requests = [ask(f"sentence {i}") for i in range(10)]
    cache_path = tmp_path / "llm.sqlite"

    identity = make_backend(cfg, None).identity()

    def hits() -> list[bool]:
        return [answer is not None for answer in cached_answers(requests, identity, cache_path)]

    before = estimate(requests, cfg, hits())
    assert not cache_path.exists()  # a dry run creates nothing
    assert (before.requests, before.cached, before.to_send) == (10, 0, 10)
    assert before.prompt_tokens == sum(heuristic_tokens(r) for r in requests)
    assert before.max_completion_tokens == 500
    assert before.method.startswith("heuristic")

    make_backend(cfg, cache_path).generate(requests[:4])
    after = estimate(requests, cfg, hits())
    assert (after.cached, after.to_send) == (4, 6)
    assert after.prompt_tokens == sum(heuristic_tokens(r) for r in requests[4:])
    assert after.max_completion_tokens == 300
    assert after.to_send == 6
    assert server.state.total == 4


def test_estimate_uses_a_local_tokenizer(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from tests.tiny_models import build_tiny_chat_model

    model = build_tiny_chat_model(tmp_path / "chat")
    cfg = LLMConfig(backend="transformers", model=str(model), max_tokens=8)
    requests = [ask("A man is playing a guitar."), ask("Two dogs run.")]
    result = estimate(requests, cfg)
    tokenizer = AutoTokenizer.from_pretrained(model)
    expected = sum(
        len(
            tokenizer.apply_chat_template(
                list(r.messages), tokenize=True, add_generation_prompt=True
            )["input_ids"]
        )
        for r in requests
    )
    assert result.prompt_tokens == expected
    assert result.method.startswith("tokenizer of")


@pytest.mark.parametrize(
    ("settings", "kind"),
    [
        ({"backend": "openai", "model": "gpt-4o-mini"}, OpenAIBackend),
        (
            {"backend": "openai-compatible", "model": "m", "base_url": "http://127.0.0.1:8000/v1"},
            OpenAIBackend,
        ),
        ({"backend": "vllm", "model": "m", "engine_kwargs": {"max_model_len": 4096}}, VLLMBackend),
        ({"backend": "transformers", "model": "m", "batch_size": 4}, TransformersBackend),
    ],
)
def test_factory_picks_the_backend_without_loading_anything(settings: dict, kind: type) -> None:
    cfg = LLMConfig(temperature=0.2, seed=1, **settings)
    backend = make_backend(cfg, None)
    assert type(backend) is kind and backend.name == cfg.backend
    # (the identity of an HTTP backend asks its server: tests/llm/test_model_identity.py)
    assert backend.model == cfg.model
    assert backend.sampling == {"temperature": 0.2, "top_p": None, "max_tokens": 256, "seed": 1}


def test_factory_passes_the_http_settings() -> None:
    cfg = LLMConfig(
        backend="openai-compatible",
        model="m",
        base_url="http://127.0.0.1:8000/v1",
        concurrency=3,
        max_retries=2,
        request_timeout_s=7,
        rate_limit_budget_s=9,
        api_key_env="MY_KEY",
    )
    backend = make_backend(cfg, None)
    assert isinstance(backend, OpenAIBackend)
    assert (
        backend.base_url,
        backend.concurrency,
        backend.max_retries,
        backend.request_timeout_s,
        backend.rate_limit_budget_s,
    ) == (
        "http://127.0.0.1:8000/v1",
        (1, 3),
        2,
        7,
        9,
    )
    assert backend.api_key_env == "MY_KEY"


def test_check_through_the_cache_reports_a_missing_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("CSEAUG_ABSENT_KEY", raising=False)
    cfg = LLMConfig(backend="openai", model="gpt-4o-mini", api_key_env="CSEAUG_ABSENT_KEY")
    backend = make_backend(cfg, tmp_path / "llm.sqlite")
    assert isinstance(backend, CachedBackend)
    with pytest.raises(BackendError, match="CSEAUG_ABSENT_KEY"):
        backend.check()
