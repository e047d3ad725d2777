"""``cseaug build --dry-run`` on a GPU config prints the GPU plan; other configs print none."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.config import RunConfig
from cseaug.pipeline.dry_run import estimate_build


def ski_config(shared_data: Path, tmp_path: Path, **llm: object) -> dict:
    return {
        "name": "gpu-plan",
        "method": "ski",
        "corpus": {"path": str(shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt")},
        "sample": {"size": 300, "include_other": False},
        "llm": {"max_tokens": 128, **llm},
        "output": {"root": str(tmp_path)},
        "diagnostics": {"enabled": False},
    }


def test_dry_run_of_a_vllm_config_prints_requests_tokens_and_the_bound(
    shared_data: Path, tmp_path: Path, cached_hub_model
) -> None:
    cached_hub_model("meta-llama/Llama-2-7b-chat-hf")  # the dry run checks it can be had
    config = tmp_path / "ski-vllm.yaml"
    config.write_text(
        yaml.safe_dump(
            ski_config(shared_data, tmp_path, backend="vllm", model="meta-llama/Llama-2-7b-chat-hf")
        )
    )
    result = CliRunner().invoke(
        app, ["build", "--config", str(config), "--dry-run"], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    rows = dict(
        (cells[1].strip(), cells[2].strip())
        for cells in (line.split("│") for line in result.output.splitlines())
        if len(cells) == 4
    )
    assert (rows["requests"], rows["to send"], rows["max completion tokens"]) == (
        "300",
        "300",
        "38,400",
    )
    assert int(rows["prompt tokens"].replace(",", "")) > 300 * 50  # the SKICSE template + sentence
    assert (
        rows["gpu plan"] == "vllm on one H100 80GB, meta-llama/Llama-2-7b-chat-hf (7B parameters)"
    )
    assert "(estimate, not measured" in rows["gpu plan throughput"]
    assert (
        rows["gpu plan wall time"].startswith("≥ ")
        and "bound, not measured" in rows["gpu plan wall time"]
    )
    assert not (tmp_path / "datasets").exists()


def test_dry_run_of_a_transformers_gpu_config_quotes_the_measurement(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cseaug.pipeline import dry_run

    cfg = RunConfig.model_validate(
        ski_config(
            shared_data,
            tmp_path,
            backend="transformers",
            model="Qwen/Qwen2.5-0.5B-Instruct",
            batch_size=8,
            device="cuda",
        )
    )
    estimate = estimate_build(cfg)
    assert estimate["gpu_plan_throughput"].startswith("8.9 req/s (measured")
    assert estimate["gpu_plan_wall_time"].startswith("~34 s with 32-token answers")  # 300 / 8.9
    on_auto = cfg.model_copy(update={"llm": cfg.llm.model_copy(update={"device": "auto"})})
    monkeypatch.setattr(dry_run, "cuda_visible", lambda: True)
    assert "gpu_plan" in estimate_build(on_auto)
    monkeypatch.setattr(dry_run, "cuda_visible", lambda: False)
    assert "gpu_plan" not in estimate_build(on_auto)  # auto on a machine without a GPU: the CPU
    on_cpu = cfg.model_copy(update={"llm": cfg.llm.model_copy(update={"device": "cpu"})})
    assert "gpu_plan" not in estimate_build(on_cpu)


@pytest.mark.parametrize("backend", ["openai", "auto"])
def test_no_gpu_plan_for_an_endpoint_nor_for_auto_on_a_cpu_only_install(
    shared_data: Path, tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cseaug.llm import factory
    from cseaug.pipeline import dry_run

    monkeypatch.setattr(factory, "cuda_visible", lambda: False)
    monkeypatch.setattr(dry_run, "cuda_visible", lambda: False)
    cfg = RunConfig.model_validate(
        ski_config(shared_data, tmp_path, backend=backend, model="Qwen/Qwen2.5-7B-Instruct")
    )
    assert "gpu_plan" not in estimate_build(cfg)
