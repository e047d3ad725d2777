"""What identifies the model that writes an answer: part of every response-cache key.

docs/llm-backends.md, "What identifies a model".

Example:
    >>> served_identity({"id": "m", "object": "model", "created": 1732, "owned_by": "vllm", "root": "/ckpt/a"})
    {'id': 'm', 'owned_by': 'vllm', 'root': '/ckpt/a'}
    >>> answer_changing_engine_args({"quantization": "awq", "max_num_seqs": 64})
    {'quantization': 'awq'}
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SERVED_FIELDS = ("id", "owned_by", "root", "parent", "revision")
"""Fields of a ``/models`` entry that name the weights (not ``created``: ``vllm serve`` puts the
time of the listing there)."""

SPEED_ONLY_ENGINE_ARGS = frozenset(
    {
        "block_size",
        "cpu_offload_gb",
        "disable_custom_all_reduce",
        "disable_log_stats",
        "enable_chunked_prefill",
        "enable_prefix_caching",
        "enforce_eager",
        "gpu_memory_utilization",
        "max_num_batched_tokens",
        "max_num_seqs",
        "max_seq_len_to_capture",
        "pipeline_parallel_size",
        "swap_space",
        "tensor_parallel_size",
    }
)
"""``vllm.LLM`` arguments that change how fast answers come, never what they say."""

_EDGE_BYTES = 1 << 20  # read at each end of a checkpoint file: its header and last tensors


def served_identity(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a ``/models`` entry that identify the served weights."""
    return {name: entry[name] for name in SERVED_FIELDS if entry.get(name) is not None}


def answer_changing_engine_args(engine_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``engine_kwargs`` without :data:`SPEED_ONLY_ENGINE_ARGS`."""
    return {k: v for k, v in sorted(engine_kwargs.items()) if k not in SPEED_ONLY_ENGINE_ARGS}


def checkpoint_fingerprint(model: str) -> str | None:
    """A sha256 of a local checkpoint directory or file (None for a hub id): each file's
    relative path, size, first and last MiB, so that weights replaced at the same path are a new
    model and a 15 GB checkpoint is read in milliseconds.

    Example:
        >>> checkpoint_fingerprint("Qwen/Qwen2.5-0.5B-Instruct-not-a-local-dir") is None
        True
    """
    root = Path(model).expanduser()
    if root.is_file():  # one file holding the model (a .gguf)
        files, root = [root], root.parent
    elif root.is_dir():
        files = sorted(p for p in root.rglob("*") if p.is_file())
    else:
        return None
    digest = hashlib.sha256()
    for path in files:
        size = path.stat().st_size
        digest.update(f"{path.relative_to(root).as_posix()}\0{size}\0".encode())
        with path.open("rb") as handle:
            digest.update(handle.read(_EDGE_BYTES))
            if size > 2 * _EDGE_BYTES:  # else the rest is the last MiB or less
                handle.seek(size - _EDGE_BYTES)
            digest.update(handle.read(_EDGE_BYTES))
    return digest.hexdigest()


def local_model_identity(model: str, dtype: str) -> dict[str, Any]:
    """The dtype and :func:`checkpoint_fingerprint` of a model run in this process."""
    fingerprint = checkpoint_fingerprint(model)
    return {"dtype": dtype, **({"checkpoint": fingerprint} if fingerprint else {})}
