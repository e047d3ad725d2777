"""Generate-CSE's NT-Xent over the 2N sentences of a batch, both sides (VAEGPT-Sim section 3.2).

The paper adopts SimCLR's NT-Xent (via ConSERT, SimCSE), which averages the term of each of
the 2N source and generated sentences; ``MultipleNegativesRankingLoss`` with
:data:`NT_XENT_DIRECTIONS` is the term of the N sources, and :class:`SymmetricNTXentLoss`
averages it with the term of the N views.
"""

from __future__ import annotations

from typing import Any

from cseaug.errors import require

losses = require(
    "sentence_transformers.sentence_transformer.losses", "hf", "Training a sentence encoder"
)

NT_XENT_DIRECTIONS = ("query_to_doc", "query_to_query")
"""h_i against every other of the 2N sentences: the views and the other anchors."""


class SymmetricNTXentLoss(losses.MultipleNegativesRankingLoss):
    """NT-Xent over 2N sentences on (anchor, view) columns, averaged over both sides;
    ``scale`` is 1 / tau."""

    def __init__(self, model: Any, scale: float) -> None:
        super().__init__(model, scale=scale, directions=NT_XENT_DIRECTIONS, partition_mode="joint")

    def compute_loss_from_embeddings(self, embeddings: list[Any], labels: Any) -> Any:
        anchors, views = embeddings
        from_anchors = super().compute_loss_from_embeddings([anchors, views], labels)
        from_views = super().compute_loss_from_embeddings([views, anchors], labels)
        return (from_anchors + from_views) / 2
