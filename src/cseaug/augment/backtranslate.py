"""OssCSE back-translation with an MER filter (OssCSE section 4, "Data augmentation", Step 2; appendix A).

Each sentence goes round trip through every pivot language (the paper: WMT19 en→de→en and
en→ru→en); a candidate is kept only when its Match Error Rate against the source lies
within ``mer_range`` (appendix A: [0.15, 0.6]), and ``prefer`` picks among several (the
paper is silent). A sentence with none goes to rejects (``mer_out_of_range``) with every
candidate and its MER. On a GPU the models stay resident when they fit
(:func:`weights_fit`) and a :class:`~cseaug.augment.tokenizer_worker.TokenizerProcess`
tokenizes beside the GPU loop (docs/osscse.md, "Step 2"; docs/gpu.md, "Back-translation").
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from cseaug.augment.tokenizer_worker import TokenizerProcess, Tokenizers
from cseaug.augment.translation import Translator
from cseaug.batching import free_memory_bytes
from cseaug.config import BacktranslationConfig
from cseaug.dataset.schema import reject_record, rejects_table, rows_table
from cseaug.errors import ConfigError, InputError
from cseaug.metrics.mer import mer_pairs
from cseaug.secrets import Scrubber
from cseaug.step import Step, StepResult

logger = logging.getLogger(__name__)

WEIGHTS_SHARE = 0.5
"""Share of the free GPU memory the translation models' weights may take for all of them to
stay on the GPU at once; the rest is for the batches."""

STAGE = "backtranslation"
"""``stage`` of the rejects this module writes; ``positive_method`` is ``backtranslation:<pivot>``."""

OUT_OF_RANGE = "mer_out_of_range"
"""Reject reason: no candidate's MER lies within the configured range."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One round trip of a sentence through a pivot language (e.g. ``de``): the translation
    into it, the translation back into English and that one's MER against the source."""

    pivot: str
    intermediate: str
    text: str
    mer: float


@dataclass(frozen=True, slots=True)
class BackTranslationResult:
    """The candidates of one sentence and the one kept (None when none qualifies)."""

    text: str
    candidates: tuple[Candidate, ...]
    chosen: Candidate | None

    @property
    def ok(self) -> bool:
        return self.chosen is not None


def select_candidate(
    candidates: Sequence[Candidate], mer_range: tuple[float, float], prefer: str = "higher_mer"
) -> Candidate | None:
    """The candidate to keep: MER within the closed ``mer_range``, then by ``prefer``.

    Ties and ``first_pivot`` go to the earlier pivot in ``candidates`` (``prefer`` is checked
    by the config: ``higher_mer``, ``lower_mer`` or ``first_pivot``).

    Example:
        >>> de, ru = Candidate("de", "", "x", 0.3), Candidate("ru", "", "y", 0.5)
        >>> select_candidate([de, ru], (0.15, 0.6)).pivot
        'ru'
        >>> select_candidate([de, ru], (0.15, 0.6), "first_pivot").pivot
        'de'
        >>> select_candidate([de, ru], (0.15, 0.25)) is None
        True
    """
    low, high = mer_range
    qualifying = [c for c in candidates if low <= c.mer <= high]  # NaN never qualifies
    if not qualifying:
        return None
    if prefer == "higher_mer":
        return max(qualifying, key=lambda c: c.mer)
    if prefer == "lower_mer":
        return min(qualifying, key=lambda c: c.mer)
    return qualifying[0]


def weights_fit(weight_bytes: Sequence[int], free_bytes: int | None) -> bool:
    """Whether models of ``weight_bytes`` fit on a device with ``free_bytes`` free at once
    (within :data:`WEIGHTS_SHARE`); always True on the CPU (``free_bytes`` None).

    Example:
        >>> weights_fit([700_000_000] * 4, 16 * 2**30), weights_fit([700_000_000] * 4, 4 * 2**30)
        (True, False)
    """
    return free_bytes is None or sum(weight_bytes) <= WEIGHTS_SHARE * free_bytes


class BackTranslator:
    """Round trips through every pivot, then the MER filter (OssCSE Step 2).

    Every model is loaded when the back-translator is made, so a wrong name fails before
    any work; a model used by two pivots is loaded once.

    ``pivots``, ``mer_range`` and ``prefer`` are the ``backtranslation`` keys of
    docs/osscse.md; ``translator_options`` go to every :class:`Translator`;
    ``tokenizer_process`` (None: on a GPU only) tokenizes in a separate process.
    """

    def __init__(
        self,
        pivots: Mapping[str, tuple[str, str]],
        *,
        mer_range: tuple[float, float] = (0.15, 0.6),
        prefer: str = "higher_mer",
        tokenizer_process: bool | None = None,
        **translator_options: Any,
    ) -> None:
        if not pivots:
            raise ConfigError(
                "back-translation needs at least one pivot, e.g. {'de': (en-de model, de-en model)}"
            )
        self.pivots = {pivot: (str(pair[0]), str(pair[1])) for pivot, pair in pivots.items()}
        self.mer_range = (float(mer_range[0]), float(mer_range[1]))
        self.prefer = prefer
        names = dict.fromkeys(name for pair in self.pivots.values() for name in pair)
        self.translators = {
            name: Translator(name, **translator_options, place_now=False) for name in names
        }
        device = next(iter(self.translators.values())).device
        self.resident = weights_fit(
            [t.weight_bytes for t in self.translators.values()], free_memory_bytes(device)
        )
        if self.resident:
            for translator in self.translators.values():
                translator.place()
        else:
            logger.info("the translation models do not fit on %s at once: one at a time", device)
        side_process = tokenizer_process if tokenizer_process is not None else device != "cpu"
        max_tokens = {name: t.max_source_tokens for name, t in self.translators.items()}
        if side_process:
            self.tokenizers: Tokenizers = TokenizerProcess(max_tokens)
        else:
            loaded = {name: t.tokenizer for name, t in self.translators.items()}
            self.tokenizers = Tokenizers(loaded, max_tokens)

    @classmethod
    def from_config(cls, cfg: BacktranslationConfig) -> BackTranslator:
        """A back-translator from the ``backtranslation`` section of a run config (its keys
        are this class's arguments and the :class:`Translator` options)."""
        return cls(**cfg.model_dump())

    def _translate(
        self, name: str, ids: list[list[int]], then: str | None, description: str
    ) -> tuple[list[str], list[list[int]] | None]:
        translator = self.translators[name]
        if not self.resident:
            translator.place()
        try:
            return translator.translate(ids, self.tokenizers, then, description)
        finally:
            if not self.resident:
                translator.evict()

    def round_trip(self, texts: Sequence[str], pivot: str) -> tuple[list[str], list[str]]:
        """(translations into ``pivot``, translations back into English) of ``texts``: the
        stage's own path for one pivot, without its checks, which
        ``benchmarks/bench_backtranslation.py`` times against a plain ``generate`` loop."""
        if pivot not in self.pivots:
            raise ConfigError(f"unknown pivot {pivot!r}; configured: {sorted(self.pivots)}")
        forward, _ = self.pivots[pivot]
        return self._round_trip(pivot, self.tokenizers.encode(forward, texts).result())

    def _round_trip(self, pivot: str, source_ids: list[list[int]]) -> tuple[list[str], list[str]]:
        forward, backward = self.pivots[pivot]
        middle, middle_ids = self._translate(
            forward, source_ids, backward, f"Back-translation en→{pivot}"
        )
        back, _ = self._translate(backward, middle_ids or [], None, f"Back-translation {pivot}→en")
        return middle, back

    def backtranslate(self, texts: Sequence[str]) -> list[BackTranslationResult]:
        """Candidates of every pivot for each sentence and the one kept by the MER filter.

        Raises:
            InputError: an input is not a string.
        """
        bad = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
        if bad is not None:
            raise InputError(f"back-translation input #{bad} is {texts[bad]!r}, not a string")
        # every pivot's source ids at once: the later pivots' are ready when their turn comes
        encoded = {
            forward: self.tokenizers.encode(forward, texts) for forward, _ in self.pivots.values()
        }
        per_pivot: list[list[Candidate]] = []
        for pivot, (forward, _) in self.pivots.items():
            middle, back = self._round_trip(pivot, encoded[forward].result())
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
            results.append(BackTranslationResult(text, candidates, chosen))
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
        """Free every model and stop the tokenizer process."""
        self.tokenizers.close()
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


class BackTranslationStage(Step):
    """OssCSE Step 2 as a step: fills ``positive`` (``positive_method = "backtranslation:<pivot>"``).

    Rows keep their other columns; anchors without a qualifying candidate go to rejects
    (stage ``backtranslation``, every candidate and its MER in ``detail``). ``details``
    give each kept row's candidate and MER per pivot (``candidate_<pivot>``, ``mer_<pivot>``).
    :meth:`close` frees the back-translator's models.
    """

    name = STAGE

    def __init__(self, backtranslator: BackTranslator) -> None:
        self.backtranslator = backtranslator

    def __call__(self, rows: pa.Table) -> StepResult:
        records = rows.to_pylist()
        results = self.backtranslator.backtranslate([r["sentence"] for r in records])
        mer_range = list(self.backtranslator.mer_range)
        scrub = Scrubber()
        out, rejects, kept = [], [], []
        for record, result in zip(records, results, strict=True):
            if result.chosen is not None:
                method = f"{STAGE}:{result.chosen.pivot}"
                out.append({**record, "positive": result.chosen.text, "positive_method": method})
                kept.append(result)
            else:
                candidates = [{**asdict(c), "mer": round(c.mer, 4)} for c in result.candidates]
                detail = {"mer_range": mer_range, "candidates": candidates}
                anchor = record.get("id"), record["sentence"]
                rejects.append(
                    reject_record(*anchor, STAGE, "positive", OUT_OF_RANGE, None, detail, scrub)
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
            details=pa.table(details),
        )

    def manifest(self) -> dict[str, Any]:
        """The translation models and settings, for the build manifest."""
        return {"model": {"backtranslation": self.backtranslator.identity()}}

    def close(self) -> None:
        """Free the translation models."""
        self.backtranslator.close()
