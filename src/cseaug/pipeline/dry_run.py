"""The dry run: what a build would spend, found by running its stage, and its judge, against a
:class:`RecordingBackend` in place of the LLM; nothing is sent or published, the run store is
not touched (docs/llm-backends.md, "Dry-run estimate").
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from cseaug.config import LLM_METHODS, LLMConfig, RunConfig
from cseaug.corpus.prepare import prepare_corpus, warn_short_sample
from cseaug.errors import BackendError
from cseaug.llm.base import ChatRequest, ChatResponse, LLMBackend, ProgressCallback
from cseaug.llm.estimate import (
    PRICED_BACKENDS,
    Estimate,
    api_costs,
    cached_answers,
    estimate,
    in_process_seconds,
    on_disk,
)
from cseaug.llm.factory import cuda_visible, make_backend, resolve_backend
from cseaug.llm.throughput import gpu_plan
from cseaug.llm.transformers_backend import TransformersBackend
from cseaug.pipeline.stages import ServedModels, make_llm_stage
from cseaug.progress import duration


class RecordingBackend(LLMBackend):
    """Records requests and answers each with its answer in the response cache (``cache_path``)
    under ``identity``, else with a stand-in that passes the answer checks (:func:`stand_in`),
    so that second-round requests (``generation.derive_from: positive``) are counted too."""

    name = "recording"

    def __init__(
        self, identity: dict[str, Any] | None = None, cache_path: Path | None = None
    ) -> None:
        super().__init__(model="recording", sampling={})
        self.requests: list[ChatRequest] = []
        self.cached: list[bool] = []
        """Per recorded request: whether the cache held its answer."""
        self._identity = identity
        self._cache_path = cache_path

    def _generate(
        self, requests: list[ChatRequest], progress: ProgressCallback | None
    ) -> list[ChatResponse]:
        self.requests.extend(requests)
        stored = cached_answers(requests, self._identity, self._cache_path)
        self.cached.extend(answer is not None for answer in stored)
        return [
            ChatResponse(key=r.key, text=answer if answer is not None else stand_in(r))
            for r, answer in zip(requests, stored, strict=True)
        ]


def stand_in(request: ChatRequest) -> str:
    """An answer for a request never answered: its last message's words reversed, plus one."""
    return " ".join([*reversed(request.messages[-1]["content"].split()), "standin"])


def priced(found: Estimate, llm: LLMConfig) -> dict[str, Any]:
    """Requests, cache hits and tokens of ``found``, and their price on the paid APIs."""
    counted = ("requests", "cached", "to_send", "prompt_tokens", "max_completion_tokens")
    out: dict[str, Any] = {name: getattr(found, name) for name in counted}
    if resolve_backend(llm.backend) in PRICED_BACKENDS:
        out.update(api_costs(found, llm.price))
    return out


def recorder_for(
    llm: LLMConfig, cache_path: Path, served: dict[str, Any] | None
) -> tuple[RecordingBackend, str | None]:
    """A recorder that answers from the response cache under ``llm``'s identity, and None; or,
    where that identity needs an endpoint that does not answer (``served``, the preflight's
    probe, had nothing), a recorder of stand-ins and why the cache was not read."""
    if not cache_path.is_file():
        return RecordingBackend(), None
    backend = make_backend(llm, None, served=served)
    try:
        return RecordingBackend(backend.identity(), cache_path), None
    except BackendError:
        reason = "not read (the endpoint is needed to match its answers): every request counted"
        return RecordingBackend(), reason
    finally:
        backend.close()


def calibrated_wall_time(llm: LLMConfig, requests: list[ChatRequest]) -> str:
    """The generation time of ``requests`` on the local ``transformers`` model of ``llm``: the
    model is loaded and the first batch timed for a few tokens (seconds on a CPU)."""
    backend = make_backend(llm, None)
    assert isinstance(backend, TransformersBackend)  # the caller checked the engine
    try:
        started = time.perf_counter()
        backend.check()
        loaded = time.perf_counter() - started
        rows, prefill, step = backend.calibrate(requests)
    except BackendError as exc:
        return f"not measured: {exc}"
    finally:
        backend.close()
    seconds = loaded + in_process_seconds(rows, prefill, step, len(requests), llm.max_tokens)
    return (
        f"≤ {duration(seconds)}: load {loaded:.0f} s, then per batch of {rows} a prefill of "
        f"{prefill:.1f} s and {step:.2f} s per token up to max_tokens ({llm.max_tokens}), "
        "measured on the first batch"
    )


def estimate_build(cfg: RunConfig, served: ServedModels | None = None) -> dict[str, Any]:
    """Corpus counts and, for LLM methods, requests and tokens the build would spend; the
    response cache is matched with what the preflight's probe reported (``served``; None:
    an API backend's endpoint is asked now)."""
    prepared = prepare_corpus(cfg.corpus, cfg.sample, cfg.method)
    warn_short_sample(prepared)
    shard = cfg.execution.shard_size
    out: dict[str, Any] = {
        "corpus_kept": prepared.stats["sentences"],
        "corpus_rejects": prepared.rejects.num_rows,
        "sample": prepared.sample.num_rows,
        "other_rows": prepared.num_other,  # 0 without sample.include_other
        "shards": max(1, -(-prepared.sample.num_rows // shard)),
    }
    if cfg.method not in LLM_METHODS or cfg.llm is None:
        out["llm_requests"] = 0
        return out
    served = served or ServedModels()
    recorder, unread = recorder_for(cfg.llm, cfg.cache_path, served.llm)
    stage = make_llm_stage(cfg, recorder)
    generated = stage(prepared.sample).rows
    found = estimate(recorder.requests, cfg.llm, recorder.cached)
    out.update(priced(found, cfg.llm))
    out["token_count"] = found.method
    if unread:
        out["cache"] = unread
    judge_llm = cfg.judge_llm
    if judge_llm is not None:  # one request per generated row, counted and priced apart
        from cseaug.quality.judge import LLMJudge

        judge_recorder, unread = recorder_for(judge_llm, cfg.cache_path, served.judge)
        LLMJudge.from_config(cfg, judge_recorder)(generated)
        judged = estimate(judge_recorder.requests, judge_llm, judge_recorder.cached)
        out.update({f"judge_{key}": value for key, value in priced(judged, judge_llm).items()})
        if unread:
            out["judge_cache"] = unread
    engine = resolve_backend(cfg.llm.backend)
    device = cfg.llm.device
    # torch is imported (cuda_visible) only for a local transformers model on "auto"
    on_gpu = engine == "transformers" and (
        device.startswith("cuda") or (device == "auto" and cuda_visible())
    )
    if engine == "transformers" and found.to_send and on_disk(cfg.llm.model):
        unsent = [r for r, hit in zip(recorder.requests, recorder.cached, strict=True) if not hit]
        out["wall_time"] = calibrated_wall_time(cfg.llm, unsent)
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
