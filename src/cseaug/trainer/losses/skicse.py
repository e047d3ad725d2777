"""SKICSE's losses: SimCSE's objective weighted against knowable-information (SKI) terms.

SKICSE (anonymous ACL submission), section 3.2, with h = f(x), sim = cosine, tau 0.05:

* unsupervised, rows (x, x, x_ski): eq. 3 ``L = (1 - lambda) L_simcse (eq. 1) + lambda
  L_skicse (eq. 2)``, eq. 2 the InfoNCE of h against h^ski;
* supervised, rows (x, x+, x-, x_ski), every denominator D over the batch's {h_j^+, h_j^-}:
  eq. 4 ``-log e^{sim(h_i, h_i^+)/tau} / D(h_i)``, eq. 5 ``-log e^{sim(h_i^ski, h_i^-)/tau} /
  D(h_i^ski)`` (as printed), eq. 6 ``-log e^{sim(h_i, h_i^ski)/tau} / D(h_i)``, eq. 7 ``L =
  (1 - lambda_1 - lambda_2) eq.4 + lambda_1 eq.5 + lambda_2 eq.6``.

Eq. 6 read literally is unbounded below; ``eq6_reading="bounded"`` (the default) adds its
numerator's term to the denominator (docs/trainer.md, "SKICSE eq. 6"). Defaults (appendix
A): lambda 0.15; lambda_1 0.1, lambda_2 0.3.
"""

from __future__ import annotations

from typing import Any, Literal

from cseaug.trainer.losses.contrastive import PaperLoss, cosine_matrix, info_nce, torch

F = torch.nn.functional


class SKICSEUnsupervisedLoss(PaperLoss):
    """(1 - lambda) InfoNCE(h, h') + lambda InfoNCE(h, h^ski) (SKICSE eq. 1-3) on (x, x, x_ski),
    ``ski_weight`` lambda of eq. 3."""

    paper = "skicse"
    config_keys = ("temperature", "ski_weight")
    ski_weight: float = 0.15

    def loss(self, anchor: Any, dropout_view: Any, knowledge: Any) -> Any:
        simcse = info_nce(anchor, dropout_view, self.temperature)
        skicse = info_nce(anchor, knowledge, self.temperature)
        return (1 - self.ski_weight) * simcse + self.ski_weight * skicse


class SKICSESupervisedLoss(PaperLoss):
    """SKICSE eq. 7 on (x, x+, x-, x_ski): SimCSE's supervised loss and the two SKI terms,
    ``ski_weights`` (lambda_1, lambda_2), eq. 6 read as ``eq6_reading`` (module docstring)."""

    paper = "skicse"
    config_keys = ("temperature", "ski_weights", "eq6_reading")
    ski_weights: tuple[float, float] = (0.1, 0.3)
    eq6_reading: Literal["bounded", "literal"] = "bounded"

    def loss(self, anchor: Any, positive: Any, negative: Any, knowledge: Any) -> Any:
        tau = self.temperature
        candidates = torch.cat([positive, negative])  # {h_j^+} then {h_j^-}: every denominator
        rows = torch.arange(len(anchor), device=anchor.device)
        simcse = info_nce(anchor, candidates, tau)  # eq. 4: target h_i^+ at column i
        # eq. 5: from h_i^ski, the numerator is h_i^- (column N + i), as printed
        ski_to_negative = F.cross_entropy(
            cosine_matrix(knowledge, candidates) / tau, rows + len(anchor)
        )
        # eq. 6: numerator sim(h_i, h_i^ski); denominator over {h_j^+, h_j^-}, plus the
        # numerator's own term in the bounded reading
        numerator = F.cosine_similarity(anchor, knowledge, dim=-1) / tau
        terms = cosine_matrix(anchor, candidates) / tau
        if self.eq6_reading == "bounded":
            terms = torch.cat([numerator[:, None], terms], dim=1)
        anchor_to_ski = (torch.logsumexp(terms, dim=1) - numerator).mean()
        lambda_1, lambda_2 = self.ski_weights
        return (
            (1 - lambda_1 - lambda_2) * simcse
            + lambda_1 * ski_to_negative
            + lambda_2 * anchor_to_ski
        )
