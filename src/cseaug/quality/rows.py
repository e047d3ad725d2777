"""The per-row checks as a build step after the stage of every method; which checks run
depends on the method (docs/quality.md, "Which checks each method runs"). A failed row's
reject (stage ``quality``) names the first failed check in the order of
:data:`cseaug.quality.checks.REASONS`, the view, its text (scrubbed) and the check's numbers.

Example:
    >>> from cseaug.config import QualityConfig
    >>> from cseaug.dataset.schema import rows_table
    >>> rows = rows_table([{"id": "a", "sentence": "A man plays a guitar.", "split": "aigen",
    ...     "positive": "A man is playing a guitar.", "negative": "A man plays a guitar!"}])
    >>> result = RowChecks("nli", QualityConfig())(rows)
    >>> result.rows.num_rows, result.rejects.column("reason").to_pylist()
    (0, ['unchanged_view'])
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import pyarrow as pa

from cseaug.config import QualityConfig, RunConfig
from cseaug.dataset.schema import VIEW_COLUMNS, reject_record, rejects_table
from cseaug.llm.clean import KNOWLEDGE_VIEW
from cseaug.patterns import NLI_LEVELS, STS_LEVELS
from cseaug.prompts import METHOD_PROMPTS
from cseaug.quality import checks
from cseaug.quality.language import LanguageDetector
from cseaug.secrets import Scrubber
from cseaug.step import Step, StepResult

REJECT_STAGE = "quality"

CHANGED_VIEWS: dict[str, tuple[str, ...]] = {  # views that must not be the anchor lightly edited
    "sts": STS_LEVELS[1:],
    "nli": NLI_LEVELS[1:],
    "ski": (KNOWLEDGE_VIEW,),
}
LLM_VIEWS: dict[str, tuple[str, ...]] = {m: tuple(views) for m, views in METHOD_PROMPTS.items()}
"""The views an LLM writes, bounded by ``llm.max_tokens``."""

ViewFailure = tuple[str, checks.Failure]  # the view and its failed check
RowCheck = Callable[[str, Mapping[str, str]], ViewFailure | None]  # (anchor, views by name)


class RowChecks(Step):
    """The per-row checks of ``method`` that the ``quality`` section switches on (``checks``,
    in order; empty: the build needs no such step); ``max_tokens`` is ``llm.max_tokens``."""

    name = "quality"

    def __init__(self, method: str, quality: QualityConfig, max_tokens: int | None = None) -> None:
        self.method = method
        self._languages = LanguageDetector() if quality.language_confidence is not None else None
        self.checks = method_checks(method, quality, max_tokens, self._languages)

    @classmethod
    def from_config(cls, cfg: RunConfig) -> RowChecks:
        return cls(cfg.method, cfg.quality, cfg.llm.max_tokens if cfg.llm is not None else None)

    def __repr__(self) -> str:
        return f"RowChecks({self.method!r})"

    def prefetch(self, texts: Sequence[str]) -> None:
        """Detect the language of ``texts`` (anchors, views as they arrive) in the background
        while the LLM answers, when that check runs."""
        if self._languages is not None:
            self._languages.prefetch(texts)

    def close(self) -> None:
        """Stop the language detector's thread."""
        if self._languages is not None:
            self._languages.close()

    def __call__(self, rows: pa.Table) -> StepResult:
        scrub = Scrubber()
        keep: list[bool] = []
        rejects: list[dict[str, Any]] = []
        counts: Counter[str] = Counter()
        for row in rows.select(["id", "sentence", *VIEW_COLUMNS, "augmentations"]).to_pylist():
            views = {v: row[v] for v in VIEW_COLUMNS if row[v] is not None}
            for extra in row["augmentations"] or ():
                views[f"augmentations[{extra['view']}]"] = extra["text"]
            failed = next(
                (f for f in (check(row["sentence"], views) for check in self.checks) if f), None
            )
            keep.append(failed is None)
            if failed is None:
                continue
            view, (reason, detail) = failed
            counts[reason] += 1
            anchor = (row["id"], row["sentence"])
            record = reject_record(*anchor, REJECT_STAGE, view, reason, views[view], detail, scrub)
            rejects.append(record)
        stats = {"rows_in": rows.num_rows, "rows_out": sum(keep), "rejected": dict(counts)}
        return StepResult(
            rows=rows.filter(pa.array(keep, pa.bool_())),
            rejects=rejects_table(rejects),
            stats=stats,
        )


def method_checks(
    method: str,
    quality: QualityConfig,
    max_tokens: int | None,
    languages: LanguageDetector | None,
) -> list[RowCheck]:
    """The checks of ``method`` that ``quality`` switches on, in the order of
    :data:`cseaug.quality.checks.REASONS`; ``languages`` is None when the language check is off."""
    out: list[RowCheck] = []
    if quality.hidden_text:
        out.append(lambda anchor, views: _first(views, partial(checks.hidden_text, anchor)))
    if quality.within_max_tokens and max_tokens is not None and method in LLM_VIEWS:
        written, bound = LLM_VIEWS[method], max_tokens
        out.append(
            lambda _, views: _first(
                _only(views, written), lambda text: checks.beyond_max_tokens(text, bound)
            )
        )
    if languages is not None:
        out.append(partial(_language, detector=languages, confidence=quality.language_confidence))
    if quality.identical_views:
        out.append(_identical)
    threshold = quality.unchanged_view_similarity
    if threshold is not None and method in CHANGED_VIEWS:
        changed = CHANGED_VIEWS[method]
        out.append(
            lambda anchor, views: _first(
                _only(views, changed), lambda text: checks.unchanged(anchor, text, threshold)
            )
        )
    return out


def _language(
    anchor: str, views: Mapping[str, str], detector: LanguageDetector, confidence: float
) -> ViewFailure | None:
    found = detector.detect([anchor, *views.values()])
    return _first(
        dict(zip(views, found[1:], strict=True)),
        lambda view: checks.other_language(found[0], view, confidence),
    )


def _identical(_anchor: str, views: Mapping[str, str]) -> ViewFailure | None:
    # the view columns only: Generate-CSE's positive is its first augmentation
    failed = checks.identical(_only(views, VIEW_COLUMNS))
    return (failed[1]["views"][-1], failed) if failed is not None else None


def _only(views: Mapping[str, str], names: tuple[str, ...]) -> dict[str, str]:
    return {name: text for name, text in views.items() if name in names}


def _first(
    items: Mapping[str, Any], check: Callable[[Any], checks.Failure | None]
) -> ViewFailure | None:
    """The first (name, failure) of ``check`` over ``items``, or None when all pass."""
    failures = ((name, check(item)) for name, item in items.items())
    return next(((name, failed) for name, failed in failures if failed is not None), None)
