"""NGCSE's loss on rows with the STS hierarchy (s, s^p, s^m, s^n).

NGCSE (AAAI 2024), "Pattern Utilization with Hierarchical Triplet Loss": eq. 7 ``L = L_C +
beta * L_HT`` with eq. 1, the contrastive loss with s^p as the positive (s^n is no hard
negative here, as the authors' ``_ng_forward`` with ``--use_loss3``), and eq. 6, ``L_HT =
1/2 (max(cos(s, s^m) - cos(s, s^p) + m1, 0) + max(cos(s, s^n) - cos(s, s^m) + m2, 0))``.
Defaults (Table 6, the authors' ``sts_ht.sh``): tau 0.05, m1 5e-3, m2 5e-2, beta 1.
:class:`NGCSEMixedLoss` takes the authors' mixed batches (docs/trainer.md, "NGCSE batches").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cseaug.trainer.losses.contrastive import PaperLoss, embed, info_nce, torch

F = torch.nn.functional


def hierarchical_triplet(
    anchor: Any, positive: Any, intermediate: Any, negative: Any, margins: tuple[float, float]
) -> Any:
    """NGCSE eq. 6, averaged over the batch: s^p above s^m by m1, s^m above s^n by m2."""
    s_p, s_m, s_n = (
        F.cosine_similarity(anchor, v, dim=-1) for v in (positive, intermediate, negative)
    )
    m1, m2 = margins
    return 0.5 * (F.relu(s_m - s_p + m1) + F.relu(s_n - s_m + m2)).mean()


class NGCSEHierarchicalLoss(PaperLoss):
    """L_C + beta * L_HT (NGCSE eq. 1, 6, 7) on columns (anchor, positive, intermediate,
    negative): ``temperature`` tau of eq. 1, ``margins`` (m1, m2) of eq. 6."""

    paper = "ngcse"
    config_keys = ("temperature", "margins", "beta")
    margins: tuple[float, float] = (5e-3, 5e-2)
    beta: float = 1.0

    def loss(self, anchor: Any, positive: Any, intermediate: Any, negative: Any) -> Any:
        contrastive = info_nce(anchor, positive, self.temperature)
        return contrastive + self.beta * hierarchical_triplet(
            anchor, positive, intermediate, negative, self.margins
        )


class NGCSEMixedLoss(NGCSEHierarchicalLoss):
    """NGCSE eq. 7 on a mixed batch (:data:`cseaug.trainer.objectives.MIXED`), as the authors'
    ``_ng_forward`` (docs/trainer.md, "NGCSE batches"): eq. 1 over every row, beta * eq. 6
    on its hierarchy rows. The batch holds ``anchor``, each column of ``column_labels`` for
    the rows whose label (index in ``kind_names``) has it, and ``labels``."""

    def __init__(
        self,
        model: Any,
        temperature: float = 0.05,
        *,
        kind_names: tuple[str, ...],
        column_labels: dict[str, tuple[int, ...]],
        **settings: Any,
    ) -> None:
        super().__init__(model, temperature, **settings)
        self.kind_names, self.column_labels = kind_names, column_labels

    def forward(self, sentence_features: Iterable[dict[str, Any]], labels: Any) -> Any:
        anchor, *columns = embed(self.model, sentence_features)
        return self.mixed_loss(anchor, columns, labels)

    def mixed_loss(self, anchor: Any, columns: list[Any], kinds: Any) -> Any:
        """The loss of a mixed batch of embeddings: ``columns`` as the batch carries them."""
        rows = {
            name: torch.isin(kinds, torch.tensor(labels, device=kinds.device))
            for name, labels in self.column_labels.items()
        }
        present = iter(columns)
        embedded = {name: next(present) for name, mask in rows.items() if mask.any()}
        positive = anchor.new_zeros(anchor.shape)
        for name in ("positive", "dropout_view"):
            if name in embedded:
                positive = positive.index_put((rows[name].nonzero()[:, 0],), embedded[name])
        negative = embedded.get("negative")
        negative_kinds = kinds[rows["negative"]]
        extra = (
            []
            if negative is None
            else [negative[negative_kinds == self.kind_names.index("pattern")]]
        )
        value = info_nce(anchor, torch.cat([positive, *extra]), self.temperature)
        hierarchy = kinds == self.kind_names.index("hierarchy")
        if hierarchy.any():
            low = negative[negative_kinds == self.kind_names.index("hierarchy")]
            value = value + self.beta * hierarchical_triplet(
                anchor[hierarchy],
                positive[hierarchy],
                embedded["intermediate"],
                low,
                self.margins,
            )
        return value
