"""OssCSE back-translation with an MER filter (OssCSE section 4, "Data augmentation", Step 2; appendix A).

Step 2 asks for a sentence "similar in semantics but distinctive in surface structure": each
source sentence goes round trip through machine translation, English → German → English
and English → Russian → English with facebook/wmt19-{en-de, de-en, en-ru, ru-en}, and a
candidate is kept only when its Match Error Rate against the source lies within [0.15, 0.6]
(appendix A: lower means hardly a paraphrase; higher "may have been corrupted by the
translation errors"). The paper does not say which candidate wins when both pivots
qualify; ``prefer`` decides (default ``higher_mer``: the surface farther from the source,
which is what the augmentation is for). A sentence with no qualifying candidate goes to
rejects (reason ``mer_out_of_range``) with every candidate and its MER.

Models are config (``backtranslation.pivots``): any pair of Hugging Face sequence-to-sequence
models (``AutoModelForSeq2SeqLM``) works, e.g. Marian ``Helsinki-NLP/opus-mt-*``. Generation
is beam search (``num_beams``) on batches of sentences sorted by token length, so a batch
pads little; ``device="auto"`` takes CUDA when present (``dtype="auto"``: float16 there)
and falls back to the CPU (float32). MER is :func:`cseaug.metrics.mer.mer_pairs`.

Example:
    >>> bt = BackTranslator({"de": ("facebook/wmt19-en-de", "facebook/wmt19-de-en")})  # doctest: +SKIP
    >>> result = bt.backtranslate(["Bryan Cranston will return as Walter White."])[0]  # doctest: +SKIP
    >>> result.paraphrase, result.chosen.mer  # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from cseaug.config import BacktranslationConfig
from cseaug.dataset.schema import rejects_table, rows_table
from cseaug.devices import free_device_memory, resolve_device, resolve_dtype
from cseaug.errors import ConfigError, InputError, require
from cseaug.metrics.mer import mer_pairs
from cseaug.progress import progress_bar
from cseaug.step import Step, StepResult

STAGE = "backtranslation"
"""``stage`` of the rejects this module writes; ``positive_method`` is ``backtranslation:<pivot>``."""

OUT_OF_RANGE = "mer_out_of_range"
"""Reject reason: no candidate's MER lies within the configured range."""

PREFERENCES = ("higher_mer", "lower_mer", "first_pivot")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One round trip of a sentence through a pivot language.

    Args:
        pivot: the pivot language key, e.g. ``de``.
        intermediate: the translation into the pivot language.
        text: the translation back into English.
        mer: MER of ``text`` against the source sentence.
    """

    pivot: str
    intermediate: str
    text: str
    mer: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "pivot": self.pivot,
            "intermediate": self.intermediate,
            "text": self.text,
            "mer": round(self.mer, 4),
        }


@dataclass(frozen=True, slots=True)
class BackTranslationResult:
    """The candidates of one sentence and the one kept (None when none qualifies)."""

    text: str
    candidates: tuple[Candidate, ...]
    chosen: Candidate | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.chosen is not None

    @property
    def paraphrase(self) -> str | None:
        return self.chosen.text if self.chosen is not None else None


def select_candidate(
    candidates: Sequence[Candidate], mer_range: tuple[float, float], prefer: str = "higher_mer"
) -> Candidate | None:
    """The candidate to keep: MER within the closed ``mer_range``, then by ``prefer``.

    Ties and ``first_pivot`` go to the earlier pivot in ``candidates``.

    Example:
        >>> de, ru = Candidate("de", "", "x", 0.3), Candidate("ru", "", "y", 0.5)
        >>> select_candidate([de, ru], (0.15, 0.6)).pivot
        'ru'
        >>> select_candidate([de, ru], (0.15, 0.6), "first_pivot").pivot
        'de'
        >>> select_candidate([de, ru], (0.15, 0.25)) is None
        True
    """
    if prefer not in PREFERENCES:
        raise ConfigError(f"backtranslation.prefer must be one of {PREFERENCES}, got {prefer!r}")
    low, high = mer_range
    qualifying = [c for c in candidates if low <= c.mer <= high]  # NaN never qualifies
    if not qualifying:
        return None
    if prefer == "higher_mer":
        return max(qualifying, key=lambda c: c.mer)
    if prefer == "lower_mer":
        return min(qualifying, key=lambda c: c.mer)
    return qualifying[0]


def new_tokens_cap(longest_source: int, max_new_tokens: int, max_length_ratio: float | None) -> int:
    """Most tokens a batch's translations may have: ``max_length_ratio`` × its longest source
    (in tokens) + 8, and never more than ``max_new_tokens``, so that one degenerate beam
    cannot hold a batch of short sentences for ``max_new_tokens`` steps.

    Args:
        longest_source: tokens of the batch's longest source sentence.
        max_new_tokens: the hard cap.
        max_length_ratio: None: only the hard cap.

    Example:
        >>> new_tokens_cap(10, 40, 0.5), new_tokens_cap(100, 40, 0.5), new_tokens_cap(10, 40, None)
        (13, 40, 40)
    """
    if max_length_ratio is None:
        return max_new_tokens
    return min(max_new_tokens, int(max_length_ratio * longest_source) + 8)


class Translator:
    """One translation model: beam search over length-sorted batches.

    Args:
        name: Hugging Face model id or local path of a sequence-to-sequence model.
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:1``, ...
        dtype: ``auto``, ``float32``, ``float16``, ``bfloat16``.
        batch_size: sentences per ``generate`` call.
        num_beams: beams of beam search.
        max_new_tokens: maximum tokens of one translation.
        max_length_ratio: also cap a batch's translations at this × its longest source
            (in tokens) + 8; None: only ``max_new_tokens``.
        sort_by_length: batch sentences of similar token length together (off only to
            measure what it saves).

    Example:
        >>> en_de = Translator("facebook/wmt19-en-de", num_beams=5)  # doctest: +SKIP
        >>> en_de(["Machine learning is great."])  # doctest: +SKIP
        ['Maschinelles Lernen ist großartig.']
    """

    def __init__(
        self,
        name: str,
        *,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 32,
        num_beams: int = 5,
        max_new_tokens: int = 256,
        max_length_ratio: float | None = 2.0,
        sort_by_length: bool = True,
    ) -> None:
        transformers = require("transformers", "hf", "Back-translation")
        self.name = name
        self.device = resolve_device(device, "backtranslation.device")
        self.dtype = resolve_dtype(dtype, self.device, "backtranslation.dtype")
        self.batch_size = batch_size
        self.num_beams = num_beams
        self.max_new_tokens = max_new_tokens
        self.max_length_ratio = max_length_ratio
        self.sort_by_length = sort_by_length
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(name)
            model = transformers.AutoModelForSeq2SeqLM.from_pretrained(name, dtype=self.dtype)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot load translation model {name!r}: {str(exc).rstrip('.')}. Give a Hugging Face model id that "
                "can be downloaded, or the path of a local copy, in backtranslation.pivots "
                "(FSMT models need the 'sacremoses' package)."
            ) from exc
        self.model = model.to(self.device).eval()
        positions = getattr(model.config, "max_position_embeddings", None)
        self.max_source_tokens = min(positions or 1024, 1024)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0

    def __call__(self, texts: Sequence[str], description: str | None = None) -> list[str]:
        """Translations of ``texts``, in their order."""
        torch = require("torch", "hf", "Back-translation")
        if not texts:
            return []
        ids = self.tokenizer(list(texts), truncation=True, max_length=self.max_source_tokens)[
            "input_ids"
        ]
        order = (
            sorted(range(len(ids)), key=lambda i: -len(ids[i]))
            if self.sort_by_length
            else list(range(len(ids)))
        )
        out: list[str] = [""] * len(texts)
        with progress_bar(
            description or f"Translating ({self.name})", total=len(texts), unit="sentences"
        ) as bar:
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                width = max(len(ids[i]) for i in batch)
                input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, i in enumerate(batch):
                    input_ids[row, : len(ids[i])] = torch.tensor(ids[i])
                    mask[row, : len(ids[i])] = 1
                with torch.inference_mode():
                    generated = self.model.generate(
                        input_ids=input_ids.to(self.device),
                        attention_mask=mask.to(self.device),
                        num_beams=self.num_beams,
                        max_new_tokens=new_tokens_cap(
                            width, self.max_new_tokens, self.max_length_ratio
                        ),
                        max_length=None,  # the checkpoint's max_length would fight max_new_tokens
                    )
                for i, text in zip(
                    batch,
                    self.tokenizer.batch_decode(generated, skip_special_tokens=True),
                    strict=True,
                ):
                    out[i] = text.strip()
                bar.advance(len(batch))
        return out

    def close(self) -> None:
        """Free the weights (and the GPU memory they held)."""
        self.model = None
        free_device_memory(self.device)


class BackTranslator:
    """Round trips through every pivot, then the MER filter (OssCSE Step 2).

    Every model is loaded when the back-translator is made, so a wrong name fails before
    any work; a model used by two pivots is loaded once.

    Args:
        pivots: pivot language → (forward model, backward model), names or paths.
        mer_range: keep a candidate whose MER lies in this closed range.
        prefer: ``higher_mer``, ``lower_mer`` or ``first_pivot`` when several qualify.
        translator_options: keyword arguments of :class:`Translator` (``num_beams``,
            ``batch_size``, ``max_new_tokens``, ``max_length_ratio``, ``device``, ``dtype``).

    Example:
        >>> bt = BackTranslator.from_config(BacktranslationConfig())  # doctest: +SKIP
        >>> [r.paraphrase for r in bt.backtranslate(["The cat sat on the mat."])]  # doctest: +SKIP
    """

    def __init__(
        self,
        pivots: Mapping[str, tuple[str, str]],
        *,
        mer_range: tuple[float, float] = (0.15, 0.6),
        prefer: str = "higher_mer",
        **translator_options: Any,
    ) -> None:
        if not pivots:
            raise ConfigError(
                "back-translation needs at least one pivot, e.g. {'de': (en-de model, de-en model)}"
            )
        if prefer not in PREFERENCES:
            raise ConfigError(
                f"backtranslation.prefer must be one of {PREFERENCES}, got {prefer!r}"
            )
        self.pivots = {pivot: (str(pair[0]), str(pair[1])) for pivot, pair in pivots.items()}
        self.mer_range = (float(mer_range[0]), float(mer_range[1]))
        self.prefer = prefer
        self.translator_options = dict(translator_options)
        self.translators: dict[str, Translator] = {}
        for pair in self.pivots.values():
            for name in pair:
                if name not in self.translators:
                    self.translators[name] = Translator(name, **translator_options)

    @classmethod
    def from_config(cls, cfg: BacktranslationConfig) -> BackTranslator:
        """A back-translator from the ``backtranslation`` section of a run config."""
        return cls(
            cfg.pivots,
            mer_range=cfg.mer_range,
            prefer=cfg.prefer,
            num_beams=cfg.num_beams,
            batch_size=cfg.batch_size,
            max_new_tokens=cfg.max_new_tokens,
            max_length_ratio=cfg.max_length_ratio,
            device=cfg.device,
            dtype=cfg.dtype,
        )

    def round_trip(self, texts: Sequence[str], pivot: str) -> tuple[list[str], list[str]]:
        """(translations into ``pivot``, translations back into English) of ``texts``."""
        if pivot not in self.pivots:
            raise ConfigError(f"unknown pivot {pivot!r}; configured: {sorted(self.pivots)}")
        forward, backward = self.pivots[pivot]
        middle = self.translators[forward](texts, f"Back-translation en→{pivot}")
        back = self.translators[backward](middle, f"Back-translation {pivot}→en")
        return middle, back

    def backtranslate(self, texts: Sequence[str]) -> list[BackTranslationResult]:
        """Candidates of every pivot for each sentence and the one kept by the MER filter.

        Raises:
            InputError: an input is not a string.
        """
        bad = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
        if bad is not None:
            raise InputError(f"back-translation input #{bad} is {texts[bad]!r}, not a string")
        per_pivot: list[list[Candidate]] = []
        for pivot in self.pivots:
            middle, back = self.round_trip(texts, pivot)
            mers = mer_pairs(texts, back)
            per_pivot.append(
                [
                    Candidate(pivot, m, b, float(v))
                    for m, b, v in zip(middle, back, mers, strict=True)
                ]
            )
        results = []
        for i, text in enumerate(texts):
            candidates = tuple(column[i] for column in per_pivot)
            chosen = select_candidate(candidates, self.mer_range, self.prefer)
            results.append(
                BackTranslationResult(text, candidates, chosen, None if chosen else OUT_OF_RANGE)
            )
        return results

    def identity(self) -> dict[str, Any]:
        """Models and settings, for manifests."""
        any_translator = next(iter(self.translators.values()))
        return {
            "pivots": {pivot: list(pair) for pivot, pair in self.pivots.items()},
            "mer_range": list(self.mer_range),
            "prefer": self.prefer,
            "num_beams": any_translator.num_beams,
            "max_new_tokens": any_translator.max_new_tokens,
            "max_length_ratio": any_translator.max_length_ratio,
            "device": any_translator.device,
            "dtype": str(any_translator.dtype).removeprefix("torch."),
        }

    def close(self) -> None:
        """Free every model."""
        for translator in self.translators.values():
            translator.close()


def backtranslation_stats(results: Sequence[BackTranslationResult]) -> dict[str, Any]:
    """Share kept, the pivot kept, and per pivot how many candidates qualified and their mean MER."""
    kept = sum(r.ok for r in results)
    pivots: dict[str, list[float]] = {}
    for result in results:
        for candidate in result.candidates:
            pivots.setdefault(candidate.pivot, []).append(candidate.mer)
    return {
        "sentences": len(results),
        "kept": kept,
        "share_kept": round(kept / len(results), 4) if results else 0.0,
        "chosen_pivot": dict(Counter(r.chosen.pivot for r in results if r.chosen).most_common()),
        "mean_mer": {p: round(float(np.nanmean(v)), 4) if v else None for p, v in pivots.items()},
    }


def backtranslation_reject(
    record: Mapping[str, Any], result: BackTranslationResult, mer_range: tuple[float, float]
) -> dict[str, Any]:
    """The rejects row of a sentence without a qualifying candidate (view ``positive``)."""
    return {
        "id": record.get("id"),
        "sentence": record["sentence"],
        "stage": STAGE,
        "view": "positive",
        "reason": result.reason,
        "detail": json.dumps(
            {"mer_range": list(mer_range), "candidates": [c.as_dict() for c in result.candidates]},
            ensure_ascii=False,
        ),
    }


def with_paraphrase(record: Mapping[str, Any], result: BackTranslationResult) -> dict[str, Any]:
    """``record`` with its positive view filled in from the kept candidate."""
    chosen = result.chosen
    if chosen is None:
        raise ValueError(f"no candidate was kept for {result.text!r}")
    return {**record, "positive": chosen.text, "positive_method": f"{STAGE}:{chosen.pivot}"}


class BackTranslationStage(Step):
    """OssCSE Step 2 as a step: fills ``positive`` (``positive_method = "backtranslation:<pivot>"``).

    Rows keep their other columns; anchors without a qualifying candidate go to rejects
    (stage ``backtranslation``, every candidate and its MER in ``detail``). ``details``
    give each kept row's candidate and MER per pivot (``candidate_<pivot>``, ``mer_<pivot>``).

    Args:
        backtranslator: the :class:`BackTranslator` to use; :meth:`close` frees its models.
    """

    name = STAGE

    def __init__(self, backtranslator: BackTranslator) -> None:
        self.backtranslator = backtranslator

    def __call__(self, rows: pa.Table) -> StepResult:
        records = rows.to_pylist()
        results = self.backtranslator.backtranslate([r["sentence"] for r in records])
        out, rejects, kept = [], [], []
        for record, result in zip(records, results, strict=True):
            if result.ok:
                out.append(with_paraphrase(record, result))
                kept.append(result)
            else:
                rejects.append(
                    backtranslation_reject(record, result, self.backtranslator.mer_range)
                )
        stats = {
            "stage": self.name,
            "rows_in": len(records),
            "rows_out": len(out),
            **backtranslation_stats(results),
        }
        details: dict[str, pa.Array] = {}
        for n, pivot in enumerate(self.backtranslator.pivots):
            details[f"candidate_{pivot}"] = pa.array(
                [r.candidates[n].text for r in kept], pa.string()
            )
            details[f"mer_{pivot}"] = pa.array([r.candidates[n].mer for r in kept], pa.float32())
        return StepResult(
            rows=rows_table(out),
            rejects=rejects_table(rejects),
            stats=stats,
            details=pa.table(details) if details else None,
        )

    def manifest(self) -> dict[str, Any]:
        """The translation models and settings, for the build manifest."""
        return {"model": {"backtranslation": self.backtranslator.identity()}}

    def close(self) -> None:
        """Free the translation models."""
        self.backtranslator.close()
