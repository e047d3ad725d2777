"""The dry run: what a build would spend, found by running its stage against a recorder.

The real stage is built with a :class:`RecordingBackend` in place of the LLM: it keeps
every request and answers with a stand-in (the input sentence's words reversed plus one
word, which passes the answer checks), so second-round requests (``generation.derive_from:
positive``) are counted too, with the positive's length approximated by the input's.
Nothing is sent, nothing is published, and the run store is not touched. On the paid APIs
(``openai``, ``openai-batch``) the estimate is priced for the online and the Batch API
(:func:`cseaug.llm.estimate.api_costs`).

When the LLM runs in this process on a GPU (``vllm``; ``transformers`` on ``cuda``, or on
``auto`` where a GPU is visible; ``auto`` resolved here), the estimate ends with a GPU plan:
the expected wall time from a measured throughput of the engine and model size, or a bound
labelled as an estimate where nothing was measured (:mod:`cseaug.llm.throughput`).

Example:
    >>> from cseaug.config import load_config
    >>> estimate_build(load_config("configs/demo.yaml"))["requests"]  # doctest: +SKIP
    24
"""

from __future__ import annotations

from typing import Any

from cseaug.build.stages import make_llm_stage
from cseaug.config import LLM_METHODS, RunConfig
from cseaug.corpus.prepare import prepare_corpus, warn_short_sample
from cseaug.llm.base import ChatRequest, ChatResponse, LLMBackend, ProgressCallback
from cseaug.llm.estimate import PRICED_BACKENDS, api_costs, estimate
from cseaug.llm.factory import cuda_visible, resolve_backend
from cseaug.llm.throughput import gpu_plan


class RecordingBackend(LLMBackend):
    """Records requests and answers each with its last message's words reversed, plus one."""

    name = "recording"

    def __init__(self) -> None:
        super().__init__(model="recording", sampling={})
        self.requests: list[ChatRequest] = []

    def _generate(
        self, requests: list[ChatRequest], progress: ProgressCallback | None
    ) -> list[ChatResponse]:
        self.requests.extend(requests)
        return [
            ChatResponse(
                key=r.key, text=" ".join([*reversed(r.messages[-1]["content"].split()), "standin"])
            )
            for r in requests
        ]


def estimate_build(cfg: RunConfig) -> dict[str, Any]:
    """Corpus counts and, for LLM methods, requests and tokens the build would spend."""
    prepared = prepare_corpus(cfg.corpus, cfg.sample, cfg.method)
    warn_short_sample(prepared)
    shard = cfg.execution.shard_size
    out: dict[str, Any] = {
        "corpus_kept": prepared.stats.get("kept", prepared.sample.num_rows + prepared.num_other),
        "corpus_rejects": prepared.rejects.num_rows,
        "sample": prepared.sample.num_rows,
        "other_rows": prepared.num_other if cfg.sample.include_other else 0,
        "shards": max(1, -(-prepared.sample.num_rows // shard)),
    }
    if cfg.method not in LLM_METHODS or cfg.llm is None:
        out["llm_requests"] = 0
        return out
    recorder = RecordingBackend()
    stage = make_llm_stage(cfg, recorder)
    stage(prepared.sample)
    found = estimate(recorder.requests, cfg.llm, cfg.cache_path)
    out.update(
        {
            "requests": found.requests,
            "cached": found.cached,
            "to_send": found.requests - found.cached,
            "prompt_tokens": found.prompt_tokens,
            "max_completion_tokens": found.max_completion_tokens,
            "token_count": found.method,
        }
    )
    engine = resolve_backend(cfg.llm.backend)
    if engine in PRICED_BACKENDS:
        out.update(api_costs(found, cfg.llm.price))
    device = cfg.llm.device
    # torch is imported (cuda_visible) only for a local transformers model on "auto"
    on_gpu = engine == "transformers" and (
        device.startswith("cuda") or (device == "auto" and cuda_visible())
    )
    if engine == "vllm" or on_gpu:
        out.update(
            gpu_plan(
                engine,
                cfg.llm.model,
                cfg.llm.batch_size,
                requests=found.to_send,
                prompt_tokens=found.prompt_tokens,
                max_tokens=cfg.llm.max_tokens,
            )
        )
    return out
