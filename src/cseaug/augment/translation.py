"""One translation model run fast: beam search over length-sorted batches that fit the device.

A :class:`Translator` translates token ids with ``model.generate``; sentences are sorted by
token length and cut into batches of ``batch_size``, or under ``auto`` :data:`CPU_BATCH` on
the CPU and, on a GPU, a token budget from free memory (:mod:`cseaug.batching`; the KV cache,
the source and the logits of every beam, at most :data:`GPU_MAX_BATCH`), halved on out of
memory. Token ids come from, and go to, a
:class:`~cseaug.augment.tokenizer_worker.Tokenizers` worker (docs/gpu.md, "Back-translation").
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from cseaug.augment.tokenizer_worker import Ids, Tokenizers
from cseaug.batching import TokenBudget, dtype_bytes, run_batches
from cseaug.devices import free_device_memory, resolve_device, resolve_dtype
from cseaug.errors import ConfigError, require
from cseaug.progress import progress_bar

CPU_BATCH = 32
"""Sentences per batch of ``batch_size: auto`` on the CPU (the batch size before ``auto``)."""

GPU_MAX_BATCH = 256
"""Most sentences per batch of ``batch_size: auto`` on a GPU: the fastest batch measured for the
WMT19 shape at 5 beams on an H100 (plain ``generate``, 1,024 sentences: 80 sentences/s at 256,
51 at 64, under 26 at 512; docs/gpu.md)."""

LOGIT_COPIES = 3
"""float32 tensors of one beam's vocabulary that beam search holds per step (logits,
log-probabilities, scores), counted in the budget beside the KV cache."""


def new_tokens_cap(longest_source: int, max_new_tokens: int, max_length_ratio: float | None) -> int:
    """Most tokens a batch's translations may have: ``max_length_ratio`` × its longest source
    (in tokens) + 8, and never more than ``max_new_tokens``, so that one degenerate beam
    cannot hold a batch of short sentences for ``max_new_tokens`` steps (no ratio: only that).

    Example:
        >>> new_tokens_cap(10, 40, 0.5), new_tokens_cap(100, 40, 0.5), new_tokens_cap(10, 40, None)
        (13, 40, 40)
    """
    if max_length_ratio is None:
        return max_new_tokens
    return min(max_new_tokens, int(max_length_ratio * longest_source) + 8)


def seq2seq_kv_bytes_per_token(config: Any, element_bytes: int) -> int:
    """Bytes of one token of a sequence-to-sequence decoder's KV cache: 2 × decoder layers × width × element bytes.

    Example:
        >>> from types import SimpleNamespace
        >>> seq2seq_kv_bytes_per_token(SimpleNamespace(decoder_layers=6, d_model=1024), 2)
        24576
    """
    layers = getattr(config, "decoder_layers", None) or getattr(config, "num_decoder_layers", 0)
    width = getattr(config, "d_model", None) or getattr(config, "hidden_size", 0)
    if not layers or not width:
        raise ValueError(
            f"the KV cache of model type {getattr(config, 'model_type', '?')!r} cannot be sized "
            "(its config has no decoder_layers / d_model)"
        )
    return 2 * int(layers) * int(width) * element_bytes


class Translator:
    """One translation model: beam search over length-sorted batches that fit the device.

    ``name`` is a Hugging Face id or local path of a sequence-to-sequence model; the other
    settings are the ``backtranslation`` keys of docs/osscse.md, "Step 2". The model is loaded on the host; :meth:`place` moves
    it onto the device, at once unless ``place_now`` is False (the caller decides).
    """

    def __init__(
        self,
        name: str,
        *,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int | str = "auto",
        num_beams: int = 5,
        max_new_tokens: int = 256,
        max_length_ratio: float | None = 2.0,
        place_now: bool = True,
    ) -> None:
        transformers = require("transformers", "hf", "Back-translation")
        self.name = name
        self.device = resolve_device(device, "backtranslation.device")
        self.dtype = resolve_dtype(dtype, self.device, "backtranslation.dtype")
        self.batch_size = batch_size
        self.num_beams = num_beams
        self.max_new_tokens = max_new_tokens
        self.max_length_ratio = max_length_ratio
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(name)
            model = transformers.AutoModelForSeq2SeqLM.from_pretrained(name, dtype=self.dtype)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot load translation model {name!r}: {str(exc).rstrip('.')}. Give a Hugging Face model id that "
                "can be downloaded, or the path of a local copy, in backtranslation.pivots "
                "(FSMT models need the 'sacremoses' package)."
            ) from exc
        self.model = model.eval()
        positions = getattr(model.config, "max_position_embeddings", None)
        self.max_source_tokens = min(positions or 1024, 1024)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self._budget: TokenBudget | None = None
        if place_now:
            self.place()

    @property
    def weight_bytes(self) -> int:
        """Bytes of the model's weights."""
        return sum(p.numel() * p.element_size() for p in self.model.parameters())

    def place(self) -> None:
        """Move the model onto its device (a no-op when it is there)."""
        self.model.to(self.device)

    def evict(self) -> None:
        """Move the model back to the host and free the device memory it held."""
        self.model.to("cpu")
        free_device_memory(self.device)

    def slots_per_sentence(self, longest: int) -> int:
        """Token slots of one sentence of a batch whose longest source has ``longest`` tokens."""
        config = self.model.config
        vocabulary = getattr(config, "tgt_vocab_size", None) or config.vocab_size  # FSMT's name
        kv_bytes = seq2seq_kv_bytes_per_token(config, dtype_bytes(self.dtype))
        logits = LOGIT_COPIES * int(vocabulary) * 4 // kv_bytes
        new = new_tokens_cap(longest, self.max_new_tokens, self.max_length_ratio)
        # per beam: the source twice (encoder output, cross-attention cache), the translation, the logits
        return self.num_beams * (2 * longest + new + logits)

    def budget(self) -> TokenBudget:
        """The batch budget, sized on first use (once the model is on the device), then kept."""
        if self._budget is None:
            self._budget = TokenBudget.for_device(
                self.device,
                self.batch_size,
                lambda: seq2seq_kv_bytes_per_token(self.model.config, dtype_bytes(self.dtype)),
                cpu_items=CPU_BATCH,
                gpu_items=GPU_MAX_BATCH,
                setting="backtranslation.batch_size",
            )
        return self._budget

    def encode(self, texts: Sequence[str]) -> Ids:
        """Token ids of ``texts`` with this model's tokenizer."""
        return self._tokenizers().encode(self.name, texts).result()

    def _tokenizers(self) -> Tokenizers:
        return Tokenizers({self.name: self.tokenizer}, {self.name: self.max_source_tokens})

    def _generate(self, ids: list[list[int]]) -> list[list[int]]:
        torch = require("torch", "hf", "Back-translation")
        from torch.nn.utils.rnn import pad_sequence

        rows = [torch.tensor(row, dtype=torch.long) for row in ids]
        input_ids = pad_sequence(rows, batch_first=True, padding_value=self.pad_id)
        mask = pad_sequence([torch.ones_like(row) for row in rows], batch_first=True)
        width = input_ids.shape[1]
        with torch.inference_mode():
            generated = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=mask.to(self.device),
                num_beams=self.num_beams,
                max_new_tokens=new_tokens_cap(width, self.max_new_tokens, self.max_length_ratio),
                max_length=None,  # the checkpoint's max_length would fight max_new_tokens
            )
        return generated.tolist()  # to the host now: the batch's tensors go before the next

    def translate(
        self,
        ids: Sequence[Sequence[int]],
        tokenizers: Tokenizers,
        then: str | None = None,
        description: str | None = None,
    ) -> tuple[list[str], list[list[int]] | None]:
        """Translations of sentences given as token ids, in their order.

        Each finished batch goes to ``tokenizers`` to be decoded (and, with ``then``,
        encoded for model ``then``) while the next batch is generated.

        Args:
            ids: token ids of every sentence (from :meth:`encode` or a worker).
            tokenizers: where decoding happens (knows this model by its name).
            then: a model name: also return the translations' token ids for it.
            description: label of the progress bar.

        Returns:
            The translations, and their token ids for ``then`` (None without ``then``).
        """
        if not ids:
            return [], ([] if then is not None else None)
        lengths = [len(row) for row in ids]
        order = sorted(range(len(ids)), key=lambda i: -lengths[i])
        pending: list[tuple[list[int], Future[tuple[list[str], Ids | None]]]] = []
        with progress_bar(
            description or f"Translating ({self.name})", total=len(ids), unit="sentences"
        ) as bar:
            for batch, rows in run_batches(
                order,
                lengths,
                self.slots_per_sentence,
                self.budget(),
                lambda batch: self._generate([list(ids[i]) for i in batch]),
                self.device,
            ):
                pending.append((batch, tokenizers.decode(self.name, rows, then)))
                bar.advance(len(batch))
        texts: list[str] = [""] * len(ids)
        next_ids: list[list[int]] = [[] for _ in ids]
        for batch, future in pending:
            decoded, encoded = future.result()
            for n, i in enumerate(batch):
                texts[i] = decoded[n]
                if encoded is not None:
                    next_ids[i] = encoded[n]
        return texts, (next_ids if then is not None else None)

    def __call__(self, texts: Sequence[str], description: str | None = None) -> list[str]:
        """Translations of ``texts``, in their order."""
        return self.translate(self.encode(texts), self._tokenizers(), description=description)[0]

    def close(self) -> None:
        """Free the weights (and the GPU memory they held)."""
        self.model = None
        free_device_memory(self.device)
