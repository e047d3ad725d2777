"""Tokenizing and detokenizing translations beside the GPU loop, so the GPU never waits on them.

:class:`TokenizerProcess` works in a separate process (a thread would hold the GIL the
``generate`` loop needs): while the GPU translates batch *k + 1* it decodes batch *k* and
encodes the result for the next model. :class:`Tokenizers` does the same work (:class:`_Work`)
at once, in this process (the CPU).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from cseaug.worker_process import WorkerProcess

Ids = list[list[int]]


class _Work:
    """The tokenizers of some models and the work on them (in this process or in the worker)."""

    def __init__(self, tokenizers: Mapping[str, Any], max_tokens: Mapping[str, int]) -> None:
        self.tokenizers = dict(tokenizers)
        self.max_tokens = dict(max_tokens)

    def encode(self, name: str, texts: Sequence[str]) -> Ids:
        """Token ids of ``texts`` (truncated to the longest input model ``name`` takes)."""
        if not texts:
            return []
        tokenizer, limit = self.tokenizers[name], self.max_tokens[name]
        return tokenizer(list(texts), truncation=True, max_length=limit)["input_ids"]

    def decode(
        self, name: str, rows: Sequence[Sequence[int]], then: str | None
    ) -> tuple[list[str], Ids | None]:
        """Texts of generated ``rows`` (special tokens dropped, whitespace stripped), and their
        token ids for model ``then``."""
        decoded = self.tokenizers[name].batch_decode(rows, skip_special_tokens=True)
        texts = [text.strip() for text in decoded]
        return texts, (self.encode(then, texts) if then is not None else None)


class Tokenizers:
    """Tokenizers by model name (the tokenizer, the longest input it takes) that work at once,
    in this process; their answers are futures, as :class:`TokenizerProcess`'s are."""

    def __init__(self, tokenizers: Mapping[str, Any], max_tokens: Mapping[str, int]) -> None:
        self._work = _Work(tokenizers, max_tokens)

    def _submit(self, method: str, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(getattr(self._work, method)(*args))
        return future

    def encode(self, name: str, texts: Sequence[str]) -> Future[Ids]:
        """Token ids of ``texts`` for model ``name``."""
        return self._submit("encode", name, list(texts))

    def decode(
        self, name: str, rows: Sequence[Sequence[int]], then: str | None
    ) -> Future[tuple[list[str], Ids | None]]:
        """Texts of ``rows`` of model ``name``, and their token ids for model ``then`` (None: none)."""
        return self._submit("decode", name, [list(row) for row in rows], then)

    def close(self) -> None:
        """Release the worker (here: nothing to release)."""


_WORKER: _Work | None = None
"""The worker process's tokenizers (set by :func:`_load_in_worker`)."""


def _load_in_worker(max_tokens: dict[str, int]) -> None:
    from transformers import AutoTokenizer

    global _WORKER
    _WORKER = _Work({name: AutoTokenizer.from_pretrained(name) for name in max_tokens}, max_tokens)


def _in_worker(method: str, *args: Any) -> Any:
    """Call ``method`` of the worker process's :class:`_Work` (submitted by name: picklable)."""
    return getattr(_WORKER, method)(*args)


class TokenizerProcess(Tokenizers):
    """:class:`Tokenizers` in a :class:`~cseaug.worker_process.WorkerProcess` (spawned: safe
    beside CUDA), in submission order.

    The process loads every tokenizer by name (``AutoTokenizer.from_pretrained``), as the
    translators did, so it needs nothing from this process but the names (with the longest
    input each takes); a tokenizer that cannot load raises its error from the first call.
    """

    def __init__(self, max_tokens: Mapping[str, int]) -> None:
        self._process = WorkerProcess()
        self._loaded = self._process.submit(_load_in_worker, dict(max_tokens))

    def _submit(self, method: str, *args: Any) -> Future[Any]:
        self._loaded.result()
        return self._process.submit(_in_worker, method, *args)

    def close(self) -> None:
        """Stop the process (after the work already submitted)."""
        self._process.close()
