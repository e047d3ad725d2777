"""OssCSE's loss (EMNLP 2023, section 4): ``L = l_c + l_r + lambda * l_m`` (eq. 5).

* eq. 2, ``l_c``: unsupervised SimCSE on every sentence (two dropout passes h_i, h_i^+);
* eq. 3, ``l_m``: the two-way max margin loss on the back-translation s^p and the negation
  s^n, ``alpha < sim(h, h^p) - sim(h, h^n) < beta``;
* eq. 4, ``l_r = 1/2 gamma sum_i (theta_i - theta_i^*)^2``, theta^* taken at the first batch.

Rows with both views come as (anchor, anchor, positive, negative), the rest as (anchor,
anchor) and train l_c + l_r only. Defaults (appendix A): tau 0.05, alpha 0.05, beta 0.2,
lambda 1e-3, gamma 2e-3.
"""

from __future__ import annotations

from typing import Any

from cseaug.trainer.losses.contrastive import PaperLoss, info_nce, torch

F = torch.nn.functional


def two_way_margin(anchor: Any, positive: Any, negative: Any, alpha: float, beta: float) -> Any:
    """OssCSE eq. 3, averaged over the batch."""
    cosine = F.cosine_similarity
    gap = cosine(anchor, positive, dim=-1) - cosine(anchor, negative, dim=-1)
    return (F.relu(alpha - gap) + F.relu(gap - beta)).mean()


class OssCSELoss(PaperLoss):
    """l_c + l_r + lambda * l_m (OssCSE eq. 5) on (anchor, anchor[, positive, negative]):
    ``alpha``, ``beta`` the margins of eq. 3, ``margin_weight`` lambda, ``recall_weight``
    gamma of eq. 4 (0: no recall loss)."""

    paper = "osscse"
    config_keys = ("temperature", "alpha", "beta", "margin_weight", "recall_weight")
    alpha: float = 0.05
    beta: float = 0.2
    margin_weight: float = 1e-3
    recall_weight: float = 2e-3
    _initial: list[tuple[Any, Any]] | None = None  # the weights at the first call

    def loss(
        self, anchor: Any, dropout_view: Any, positive: Any = None, negative: Any = None
    ) -> Any:
        """l_c + l_r, plus lambda * l_m when the batch has the two views."""
        value = info_nce(anchor, dropout_view, self.temperature)
        if positive is not None:
            margin = two_way_margin(anchor, positive, negative, self.alpha, self.beta)
            value = value + self.margin_weight * margin
        return value + self.recall()

    def recall(self) -> Any:
        """l_r of eq. 4 against the weights seen at the first call (the pre-trained ones)."""
        if not self.recall_weight:
            return 0.0
        if self._initial is None:
            self._initial = [
                (p, p.detach().clone()) for p in self.model.parameters() if p.requires_grad
            ]
        total = sum(((p - start) ** 2).sum() for p, start in self._initial)
        return 0.5 * self.recall_weight * total
