"""The dry run prices a build on the OpenAI API and on its Batch API (``llm.price``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.config import RunConfig
from cseaug.pipeline.dry_run import estimate_build


def dry_run(shared_data: Path, tmp_path: Path, **llm) -> dict:
    cfg = RunConfig.model_validate(
        {
            "name": "wiki-sts-cost",
            "method": "sts",
            "corpus": {"path": str(shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt")},
            "sample": {"size": 200, "seed": 1},
            "patterns": {"source": "sts12", "path": str(shared_data / "sts12_train")},
            "llm": {"model": "gpt-3.5-turbo", "max_tokens": 64, **llm},
            "output": {"root": str(tmp_path)},
        }
    )
    return estimate_build(cfg)


@pytest.mark.parametrize("backend", ["openai", "openai-batch"])
def test_the_dry_run_prices_the_prompts_it_counted(
    shared_data: Path, tmp_path: Path, backend: str
) -> None:
    price = {"input_per_1m": 2.0, "output_per_1m": 8.0, "batch_discount": 0.5}
    found = dry_run(shared_data, tmp_path, backend=backend, price=price)

    assert found["requests"] == 600 and found["max_completion_tokens"] == 600 * 64
    prompts = found["prompt_tokens"] * 2.0 / 1e6
    answers = 600 * 64 * 8.0 / 1e6
    assert found["cost_openai_api"] == (
        f"≤ ${prompts + answers:,.2f} (prompts ${prompts:,.2f} + answers ≤ ${answers:,.2f} at max_tokens)"
    )
    assert found["cost_batch_api"] == f"≤ ${(prompts + answers) / 2:,.2f} (0.5 × the online price)"
    assert found["price_per_1m_tokens"] == "$2 prompt, $8 completion (llm.price)"


def test_a_self_hosted_server_is_not_priced_per_token(shared_data: Path, tmp_path: Path) -> None:
    found = dry_run(
        shared_data, tmp_path, backend="openai-compatible", base_url="http://127.0.0.1:1/v1"
    )
    assert found["requests"] == 600
    assert not {"cost_openai_api", "cost_batch_api"} & set(found)
