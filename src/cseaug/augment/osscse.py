"""The OssCSE stage: a positive by back-translation and a negative by negation insertion.

OssCSE section 4, "Data augmentation": each anchor s_i gets a paraphrase s_i^p (Step 2,
:mod:`cseaug.augment.backtranslate`) and a negation s_i^n (Step 1,
:mod:`cseaug.augment.negation`), which the max-margin loss ranks against each other. A row
needs both views, so negation (cheap) runs first and only the negated anchors are
back-translated (expensive); an anchor that fails either step is left out and its reason
goes to rejects (stage ``negation`` or ``backtranslation``).

Rows: ``split = aigen``, ``method = osscse``, ``positive`` (``positive_method =
backtranslation:de|ru``), ``negative`` (``negative_method = negation``), ``mer_positive``,
``mer_negative``.

Example:
    >>> from cseaug.config import load_config
    >>> stage = make_osscse_stage(load_config("configs/wiki-osscse.yaml"))  # doctest: +SKIP
    >>> result = stage(rows)  # doctest: +SKIP
    >>> result.stats["negation"]["share_negated"], result.stats["backtranslation"]["share_kept"]  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from cseaug.augment.backtranslate import (
    BackTranslator,
    backtranslation_reject,
    backtranslation_stats,
    with_paraphrase,
)
from cseaug.augment.negation import Negator, negation_reject, negation_stats, with_negation
from cseaug.config import RunConfig
from cseaug.dataset.schema import SPLIT_AIGEN, rejects_table, rows_table
from cseaug.metrics.mer import mer_pairs
from cseaug.step import StageResult

METHOD = "osscse"


class OssCSEStage:
    """Positive (back-translation) and negative (negation) views of each anchor.

    Args:
        negator: the :class:`~cseaug.augment.negation.Negator`.
        backtranslator: the :class:`~cseaug.augment.backtranslate.BackTranslator`;
            :meth:`close` frees its models.
    """

    name = METHOD

    def __init__(self, negator: Negator, backtranslator: BackTranslator) -> None:
        self.negator = negator
        self.backtranslator = backtranslator

    def __call__(self, rows: pa.Table) -> StageResult:
        records = rows.to_pylist()
        sentences = [r["sentence"] for r in records]
        negations = self.negator.negate(sentences)
        negation_mers = mer_pairs(sentences, [n.negated for n in negations])
        rejects = [
            negation_reject(r, n) for r, n in zip(records, negations, strict=True) if not n.ok
        ]

        negated = [i for i, n in enumerate(negations) if n.ok]
        translations = self.backtranslator.backtranslate([sentences[i] for i in negated])
        out = []
        for i, translation in zip(negated, translations, strict=True):
            if not translation.ok:
                rejects.append(
                    backtranslation_reject(records[i], translation, self.backtranslator.mer_range)
                )
                continue
            record = with_negation(records[i], negations[i], float(negation_mers[i]))
            out.append(
                {**with_paraphrase(record, translation), "split": SPLIT_AIGEN, "method": METHOD}
            )

        stats = {
            "stage": self.name,
            "rows_in": len(records),
            "rows_out": len(out),
            "share_rows_out": round(len(out) / len(records), 4) if records else 0.0,
            "negation": negation_stats(negations),
            "backtranslation": backtranslation_stats(translations),
        }
        return StageResult(rows=rows_table(out), rejects=rejects_table(rejects), stats=stats)

    def manifest(self) -> dict[str, Any]:
        """The spaCy pipeline and translation models, for the build manifest."""
        return {
            "model": {
                "negation": self.negator.identity(),
                "backtranslation": self.backtranslator.identity(),
            }
        }

    def close(self) -> None:
        """Free the translation models."""
        self.backtranslator.close()


def make_osscse_stage(cfg: RunConfig) -> OssCSEStage:
    """The OssCSE stage of a run, its spaCy pipeline and translation models loaded.

    Raises:
        ConfigError: the spaCy pipeline or a translation model cannot be loaded.
        MissingExtraError: spaCy or transformers is not installed.
    """
    negator = Negator.from_config(cfg.negation)
    return OssCSEStage(negator, BackTranslator.from_config(cfg.backtranslation))
