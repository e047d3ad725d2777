"""The GPU plan: measured throughputs where they exist, a labelled bound where they do not."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.llm.throughput import gpu_plan, parameters_of, size_class


def test_model_size_from_the_name_or_a_local_config(tmp_path: Path) -> None:
    assert parameters_of("Qwen/Qwen2.5-7B-Instruct") == 7e9
    assert parameters_of("meta-llama/Llama-2-13b-chat-hf") == 13e9
    assert parameters_of("Qwen/Qwen2.5-0.5B-Instruct") == 0.5e9
    assert parameters_of("gpt-4o-mini") is None
    pytest.importorskip("transformers")
    from transformers import Qwen2Config

    # the Qwen2-0.5B shape, saved without weights: ~0.49e9 by the estimate
    Qwen2Config(
        hidden_size=896, num_hidden_layers=24, intermediate_size=4864, vocab_size=151936
    ).save_pretrained(tmp_path / "local-model")
    local = parameters_of(str(tmp_path / "local-model"))
    assert local is not None and size_class(local) == "0.5B"
    assert (size_class(7e9), size_class(13e9), size_class(None)) == ("7B", None, None)


def test_vllm_gets_the_roofline_bound_labelled_as_an_estimate() -> None:
    plan = gpu_plan(
        "vllm",
        "Qwen/Qwen2.5-7B-Instruct",
        "auto",
        requests=60_000,
        prompt_tokens=60_000 * 221,
        max_tokens=64,
    )
    # 600 TFLOP/s / (2 x 7e9 x 221 FLOP) = 194 req/s; 60,000 requests: >= 5.2 min
    assert plan["gpu_plan_throughput"].startswith("≤ 194 req/s (estimate, not measured")
    assert plan["gpu_plan_wall_time"] == "≥ 5.2 min (bound, not measured)"
    longer = gpu_plan("vllm", "org/m-7B", "auto", requests=10, prompt_tokens=4420, max_tokens=8)
    assert longer["gpu_plan_throughput"].startswith("≤ 97 req/s")  # 442-token prompts: half
    unknown = gpu_plan("vllm", "org/model", "auto", requests=10, prompt_tokens=100, max_tokens=8)
    assert "no estimate" in unknown["gpu_plan_throughput"] and "gpu_plan_wall_time" not in unknown


def test_transformers_uses_the_measurement_of_its_batch_and_model_size() -> None:
    plan = gpu_plan(
        "transformers",
        "Qwen/Qwen2-7B-Instruct",
        128,
        requests=60_000,
        prompt_tokens=1,
        max_tokens=256,
    )
    assert plan["gpu_plan_throughput"].startswith("51.1 req/s (measured: transformers, batch 128")
    assert "docs/gpu.md" in plan["gpu_plan_throughput"]
    # 60,000 / 51.1 req/s = 19.6 min; 256-token answers: up to 8x that
    assert plan["gpu_plan_wall_time"] == (
        "~19.6 min with 32-token answers; up to 2.6 h if every answer takes max_tokens (256)"
    )
    small = gpu_plan(
        "transformers",
        "Qwen/Qwen2.5-0.5B-Instruct",
        8,
        requests=890,
        prompt_tokens=1,
        max_tokens=32,
    )
    assert small["gpu_plan_wall_time"].startswith("~100 s")
    auto = gpu_plan("transformers", "org/m-7B", "auto", requests=1, prompt_tokens=1, max_tokens=32)
    assert (
        "batch 128 (batch_size auto may take up to 256; not measured)"
        in auto["gpu_plan_throughput"]
    )
    unmeasured = gpu_plan(
        "transformers", "org/m-7B", 32, requests=1, prompt_tokens=1, max_tokens=32
    )
    assert unmeasured["gpu_plan_throughput"].startswith("no measurement for transformers")
    assert "gpu_plan_wall_time" not in unmeasured


def test_every_measurement_names_its_source() -> None:
    measured = gpu_plan("transformers", "org/m-7B", 8, requests=1, prompt_tokens=1, max_tokens=32)
    assert "H100" in measured["gpu_plan_throughput"]
    assert "docs/gpu.md" in measured["gpu_plan_throughput"]
    cached = gpu_plan("vllm", "org/m-7B", "auto", requests=0, prompt_tokens=0, max_tokens=8)
    assert cached["gpu_plan_wall_time"].startswith("0 s")
