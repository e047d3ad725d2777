"""NGCSE's loss on rows with the STS hierarchy (s, s^p, s^m, s^n).

NGCSE (AAAI 2024), "Pattern Utilization with Hierarchical Triplet Loss":

* eq. 1, the contrastive loss with s^p as the positive and the other rows' positives as
  negatives: ``L_C = -log e^{cos(s, s^p)/tau} / sum_j e^{cos(s, s_j^p)/tau}``. As in the
  authors' ``_ng_forward`` with ``--use_loss3``, s^n is not a hard negative here: the
  hierarchical loss places it.
* eq. 6, the hierarchical triplet (HT) loss:
  ``L_HT = 1/2 (max(cos(s, s^m) - cos(s, s^p) + m1, 0) + max(cos(s, s^n) - cos(s, s^m) + m2, 0))``
* eq. 7: ``L = L_C + beta * L_HT``, computed on the LLM-generated rows only.

Defaults (appendix, Table 6 and the authors' ``sts_ht.sh``): tau 0.05, m1 5e-3, m2 5e-2, beta 1.

Example:
    >>> loss = NGCSEHierarchicalLoss(model, temperature=0.05, margins=(5e-3, 5e-2), beta=1.0)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cseaug.dataset.card import CITATIONS
from cseaug.trainer.losses.contrastive import embed, info_nce, pairwise_cosine, torch

nn = torch.nn
F = torch.nn.functional


def hierarchical_triplet(
    anchor: Any, positive: Any, intermediate: Any, negative: Any, margins: tuple[float, float]
) -> Any:
    """NGCSE eq. 6, averaged over the batch: s^p above s^m by m1, s^m above s^n by m2."""
    s_p = pairwise_cosine(anchor, positive)
    s_m = pairwise_cosine(anchor, intermediate)
    s_n = pairwise_cosine(anchor, negative)
    m1, m2 = margins
    return 0.5 * (F.relu(s_m - s_p + m1) + F.relu(s_n - s_m + m2)).mean()


class NGCSEHierarchicalLoss(nn.Module):
    """L_C + beta * L_HT (NGCSE eq. 1, 6, 7) on columns (anchor, positive, intermediate, negative).

    Args:
        model: the SentenceTransformer being trained.
        temperature: tau of eq. 1.
        margins: (m1, m2) of eq. 6.
        beta: weight of L_HT, eq. 7.
    """

    def __init__(
        self,
        model: Any,
        temperature: float = 0.05,
        margins: tuple[float, float] = (5e-3, 5e-2),
        beta: float = 1.0,
    ) -> None:
        super().__init__()
        self.model = model
        self.temperature = temperature
        self.margins = tuple(margins)
        self.beta = beta

    def forward(self, sentence_features: Iterable[dict[str, Any]], labels: Any = None) -> Any:
        anchor, positive, intermediate, negative = embed(self.model, sentence_features)
        return self.loss(anchor, positive, intermediate, negative)

    def loss(self, anchor: Any, positive: Any, intermediate: Any, negative: Any) -> Any:
        """The loss of a batch of embeddings (one row per anchor in each argument)."""
        contrastive = info_nce(anchor, positive, self.temperature)
        return contrastive + self.beta * hierarchical_triplet(
            anchor, positive, intermediate, negative, self.margins
        )

    def get_config_dict(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "margins": self.margins, "beta": self.beta}

    @property
    def citation(self) -> str:
        return CITATIONS["ngcse"]
