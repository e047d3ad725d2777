"""The GPU plan of a dry run: expected wall time of a build's LLM requests on one GPU.

Measured rates for ``transformers``, a labelled roofline bound for ``vllm``. docs/gpu.md, "The
GPU plan of a dry run".

Example:
    >>> plan = gpu_plan("vllm", "Qwen/Qwen2.5-7B-Instruct", "auto", requests=60000,
    ...                 prompt_tokens=60000 * 221, max_tokens=64)
    >>> plan["gpu_plan_throughput"].split(" (")[0]
    '≤ 194 req/s'
"""

from __future__ import annotations

import re
from typing import Any

from cseaug.llm.vllm_backend import hf_config
from cseaug.progress import duration

GPU = "one H100 80GB"
H100_MEASURED = (
    "measured on one H100 80GB, random weights of the real shape, bf16, 2026-11: docs/gpu.md"
)
MEASURED_PROMPT_TOKENS = 221
MEASURED_ANSWER_TOKENS = 32
USABLE_FLOPS = 200 * 3e12  # one H100 in the roofline: ~200 requests/s at ~3 TFLOP each

MEASUREMENTS: dict[tuple[str, str, int], float] = {
    ("transformers", "7B", 8): 7.6,
    ("transformers", "7B", 64): 40.8,
    ("transformers", "7B", 128): 51.1,
    ("transformers", "0.5B", 8): 8.9,
    ("transformers", "0.5B", 128): 83.5,
}
"""Requests per second by (engine, model shape, batch size) (:data:`H100_MEASURED`)."""

SIZE_CLASSES = {"0.5B": (0.3e9, 0.8e9), "7B": (6e9, 9e9)}  # parameters a shape stands for
AUTO_BATCH_MEASURED = 128  # the batch quoted for batch_size auto (which may reach 256)

_SIZE_IN_NAME = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*[bB](?![a-zA-Z])")


def parameters_of(model: str) -> float | None:
    """Parameters of a model from its name (``Qwen2.5-7B-Instruct``: 7e9) or, for a local
    directory, its config; None when neither says.

    Example:
        >>> parameters_of("meta-llama/Llama-2-7b-chat-hf"), parameters_of("Qwen/Qwen2.5-0.5B-Instruct")
        (7000000000.0, 500000000.0)
    """
    if found := _SIZE_IN_NAME.search(model.rsplit("/", 1)[-1]):
        return float(found.group(1)) * 1e9
    config = hf_config(model, local_files_only=True)  # a dry run downloads nothing
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None)
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    if not hidden or not layers:
        return None
    inner = getattr(config, "intermediate_size", None) or 4 * hidden
    # attention (4 h²) and a gated MLP (3 h × inner) per layer, plus the embeddings
    return float(layers * (4 * hidden**2 + 3 * hidden * inner) + config.vocab_size * hidden)


def size_class(parameters: float | None) -> str | None:
    """The measured shape a model of ``parameters`` stands with, if any."""
    if parameters is None:
        return None
    return next((c for c, (low, high) in SIZE_CLASSES.items() if low <= parameters <= high), None)


def gpu_plan(
    engine: str,
    model: str,
    batch_size: int | str,
    *,
    requests: int,
    prompt_tokens: int,
    max_tokens: int,
) -> dict[str, Any]:
    """The dry run's GPU plan rows for ``requests`` still to send on ``engine``."""
    parameters = parameters_of(model)
    size = f"{parameters / 1e9:g}B parameters" if parameters else "size unknown"
    plan: dict[str, Any] = {"gpu_plan": f"{engine} on {GPU}, {model} ({size})"}
    if requests == 0:
        plan["gpu_plan_wall_time"] = "0 s: every request is answered in the cache"
        return plan
    longer = max(1.0, max_tokens / MEASURED_ANSWER_TOKENS)
    if engine == "vllm":
        if parameters is None:
            plan["gpu_plan_throughput"] = (
                "no estimate: the model's size is neither in its name nor in a local config"
            )
            return plan
        per_request = 2 * parameters * max(1.0, prompt_tokens / requests)
        bound = USABLE_FLOPS / per_request
        plan["gpu_plan_throughput"] = (
            f"≤ {bound:,.0f} req/s (estimate, not measured: the H100 roofline of docs/gpu.md, every prompt "
            f"prefilled in full at ~600 TFLOP/s; prefix caching can exceed it)"
        )
        fastest = requests / bound
        plan["gpu_plan_wall_time"] = f"≥ {duration(fastest)} (bound, not measured)"
        return plan
    wanted = AUTO_BATCH_MEASURED if batch_size == "auto" else int(batch_size)
    shape = size_class(parameters)
    rate = MEASUREMENTS.get((engine, shape, wanted))
    if rate is None:
        measured = sorted((c, b) for e, c, b in MEASUREMENTS if e == engine)
        plan["gpu_plan_throughput"] = (
            f"no measurement for {engine} with this model size at batch {wanted} "
            f"(measured: {', '.join(f'{c} at batch {b}' for c, b in measured)})"
        )
        return plan
    note = " (batch_size auto may take up to 256; not measured)" if batch_size == "auto" else ""
    plan["gpu_plan_throughput"] = (
        f"{rate} req/s (measured: {engine}, batch {wanted}{note}, "
        f"Qwen2-{shape} shape, ~{MEASURED_PROMPT_TOKENS} prompt + "
        f"{MEASURED_ANSWER_TOKENS} answer tokens; {H100_MEASURED})"
    )
    expected = requests / rate
    plan["gpu_plan_wall_time"] = (
        f"~{duration(expected)} with {MEASURED_ANSWER_TOKENS}-token answers; up to "
        f"{duration(expected * longer)} if every answer takes max_tokens ({max_tokens})"
    )
    return plan
