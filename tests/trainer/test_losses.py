"""Each loss on a hand-made batch against its paper's formula, written out here in plain Python.

The reference functions below restate the printed equations term by term with ``math``
(no torch, no shared helper), so a loss that drifts from its equation fails here.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from cseaug.trainer.config import TrainConfig  # noqa: E402
from cseaug.trainer.losses.ngcse import NGCSEHierarchicalLoss  # noqa: E402
from cseaug.trainer.losses.osscse import OssCSELoss  # noqa: E402
from cseaug.trainer.losses.skicse import (  # noqa: E402
    SKICSESupervisedLoss,
    SKICSEUnsupervisedLoss,
)
from cseaug.trainer.objectives import make_losses, training_sets  # noqa: E402

TAU = 0.05

# Three anchors in 3-d and their views, chosen so that every margin term of the losses is
# active for some row and inactive for another.
ANCHOR = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
POSITIVE = [[0.9, 0.3, 0.0], [0.1, 1.0, 0.2], [0.3, 0.0, 0.8]]
INTERMEDIATE = [[0.8, 0.5, 0.1], [0.6, 0.7, 0.0], [0.0, 0.4, 0.9]]
NEGATIVE = [[0.2, 0.9, 0.1], [0.0, 1.0, 0.15], [0.9, 0.1, 0.4]]
KNOWLEDGE = [[0.7, 0.1, 0.6], [0.2, 0.9, 0.1], [0.1, 0.3, 0.95]]
DROPOUT_VIEW = [[0.99, 0.05, 0.0], [0.0, 0.98, 0.1], [0.05, 0.0, 1.0]]


def cos(u: list[float], v: list[float]) -> float:
    dot = sum(a * b for a, b in zip(u, v, strict=True))
    return dot / (math.sqrt(sum(a * a for a in u)) * math.sqrt(sum(b * b for b in v)))


def neg_log_softmax(target: float, terms: list[float]) -> float:
    """-log e^{target/tau} / sum_j e^{term_j/tau}."""
    return -(target / TAU - math.log(sum(math.exp(t / TAU) for t in terms)))


def infonce_reference(anchors, positives, extra=()) -> float:
    """SimCSE's InfoNCE: positive i among every positive (and extra candidate) of the batch."""
    candidates = [*positives, *extra]
    return sum(
        neg_log_softmax(cos(a, positives[i]), [cos(a, c) for c in candidates])
        for i, a in enumerate(anchors)
    ) / len(anchors)


def tensors(*rows) -> list:
    return [torch.tensor(r, dtype=torch.float64) for r in rows]


def test_ngcse_is_eq_1_plus_beta_times_eq_6() -> None:
    m1, m2, beta = 5e-3, 5e-2, 0.7
    loss = NGCSEHierarchicalLoss(model=None, temperature=TAU, margins=(m1, m2), beta=beta)
    got = loss.loss(*tensors(ANCHOR, POSITIVE, INTERMEDIATE, NEGATIVE)).item()

    contrastive = infonce_reference(ANCHOR, POSITIVE)
    hierarchical = sum(
        0.5 * (max(cos(s, sm) - cos(s, sp) + m1, 0.0) + max(cos(s, sn) - cos(s, sm) + m2, 0.0))
        for s, sp, sm, sn in zip(ANCHOR, POSITIVE, INTERMEDIATE, NEGATIVE, strict=True)
    ) / len(ANCHOR)
    assert hierarchical > 0  # the batch exercises the margins
    assert got == pytest.approx(contrastive + beta * hierarchical, rel=1e-9)


def test_osscse_is_eq_2_plus_lambda_times_eq_3() -> None:
    alpha, beta, lam = 0.05, 0.2, 0.5
    loss = OssCSELoss(
        model=None, temperature=TAU, alpha=alpha, beta=beta, margin_weight=lam, recall_weight=0
    )
    got = loss.loss(*tensors(ANCHOR, DROPOUT_VIEW, POSITIVE, NEGATIVE)).item()

    gaps = [cos(s, p) - cos(s, n) for s, p, n in zip(ANCHOR, POSITIVE, NEGATIVE, strict=True)]
    margin = sum(max(-g + alpha, 0.0) + max(g - beta, 0.0) for g in gaps) / len(gaps)
    assert any(g < alpha for g in gaps) and any(g > beta for g in gaps)
    assert got == pytest.approx(infonce_reference(ANCHOR, DROPOUT_VIEW) + lam * margin, rel=1e-9)
    dropout_only = loss.loss(*tensors(ANCHOR, DROPOUT_VIEW)).item()
    assert dropout_only == pytest.approx(infonce_reference(ANCHOR, DROPOUT_VIEW), rel=1e-9)


def test_osscse_recall_loss_is_eq_4_against_the_first_weights() -> None:
    gamma = 2e-3
    model = torch.nn.Linear(3, 2)
    loss = OssCSELoss(model=model, recall_weight=gamma)
    assert loss.recall().item() == 0.0  # the first call records theta*
    with torch.no_grad():
        model.weight.add_(0.5)
        model.bias.sub_(0.25)
    expected = 0.5 * gamma * (6 * 0.5**2 + 2 * 0.25**2)
    assert loss.recall().item() == pytest.approx(expected, rel=1e-6)


def test_skicse_unsupervised_is_eq_3() -> None:
    lam = 0.15
    loss = SKICSEUnsupervisedLoss(model=None, temperature=TAU, ski_weight=lam)
    got = loss.loss(*tensors(ANCHOR, DROPOUT_VIEW, KNOWLEDGE)).item()
    simcse = infonce_reference(ANCHOR, DROPOUT_VIEW)  # eq. 1
    skicse = infonce_reference(ANCHOR, KNOWLEDGE)  # eq. 2
    assert got == pytest.approx((1 - lam) * simcse + lam * skicse, rel=1e-9)


@pytest.mark.parametrize("reading", ["bounded", "literal"])
def test_skicse_supervised_is_eq_7(reading: str) -> None:
    l1, l2 = 0.1, 0.3
    loss = SKICSESupervisedLoss(
        model=None, temperature=TAU, ski_weights=(l1, l2), eq6_reading=reading
    )
    got = loss.loss(*tensors(ANCHOR, POSITIVE, NEGATIVE, KNOWLEDGE)).item()

    n = len(ANCHOR)

    def denominator(h: list[float]) -> list[float]:  # sum_j e^{sim(h, h_j^+)} + e^{sim(h, h_j^-)}
        return [cos(h, c) for c in POSITIVE] + [cos(h, c) for c in NEGATIVE]

    eq4 = sum(
        neg_log_softmax(cos(ANCHOR[i], POSITIVE[i]), denominator(ANCHOR[i])) for i in range(n)
    )
    eq5 = sum(
        neg_log_softmax(cos(KNOWLEDGE[i], NEGATIVE[i]), denominator(KNOWLEDGE[i])) for i in range(n)
    )
    own = {"bounded": lambda i: [cos(ANCHOR[i], KNOWLEDGE[i])], "literal": lambda i: []}[reading]
    eq6 = sum(
        neg_log_softmax(cos(ANCHOR[i], KNOWLEDGE[i]), own(i) + denominator(ANCHOR[i]))
        for i in range(n)
    )
    expected = ((1 - l1 - l2) * eq4 + l1 * eq5 + l2 * eq6) / n
    assert got == pytest.approx(expected, rel=1e-9)


def test_skicse_eq_6_read_literally_goes_below_zero_and_bounded_does_not() -> None:
    """One row: h = h^ski (cos 1), h^+ orthogonal (cos 0), h^- opposite (cos -1); eq. 6 alone."""
    row = tensors([[1.0, 0.0]], [[0.0, 1.0]], [[-1.0, 0.0]], [[1.0, 0.0]])

    def eq6(reading: str) -> float:
        loss = SKICSESupervisedLoss(None, TAU, ski_weights=(0.0, 1.0), eq6_reading=reading)
        return loss.loss(*row).item()

    # printed: -log e^{1/tau} / (e^{0/tau} + e^{-1/tau}) = log(1 + e^{-20}) - 20
    assert eq6("literal") == pytest.approx(math.log(1 + math.exp(-20)) - 20, rel=1e-9)
    # bounded: -log e^{1/tau} / (e^{1/tau} + e^{0/tau} + e^{-1/tau}) = log(1 + e^{-20} + e^{-40})
    assert eq6("bounded") == pytest.approx(math.log1p(math.exp(-20) + math.exp(-40)), rel=1e-6)
    assert eq6("literal") < -19 and eq6("bounded") >= 0


def test_skicse_config_defaults_to_the_bounded_reading() -> None:
    cfg = TrainConfig(objective="skicse-sup")
    losses = make_losses(cfg, torch.nn.Linear(1, 1), training_sets(cfg))
    assert losses["ski"].eq6_reading == "bounded"


def nt_xent_reference(anchors, views) -> float:
    """VAEGPT-Sim section 3.2 for the anchors: -log e^{sim(h_i, h'_i)/tau} / sum_{j != i} over 2N."""
    everything = anchors + views
    return sum(
        neg_log_softmax(
            cos(anchors[i], views[i]),
            [cos(anchors[i], h) for j, h in enumerate(everything) if j != i],
        )
        for i in range(len(anchors))
    ) / len(anchors)


def _generate_cse_loss(nt_xent: str):
    cfg = TrainConfig(objective="generate-cse", temperature=TAU, generate_cse={"nt_xent": nt_xent})
    model = torch.nn.Linear(1, 1)  # unused: the loss is applied to given embeddings
    [loss] = make_losses(cfg, model, training_sets(cfg)).values()
    return loss


def test_generate_cse_anchor_loss_is_nt_xent_of_the_n_anchors() -> None:
    got = _generate_cse_loss("anchor").compute_loss_from_embeddings(tensors(ANCHOR, POSITIVE), None)
    assert got.item() == pytest.approx(nt_xent_reference(ANCHOR, POSITIVE), rel=1e-6)


def test_symmetric_nt_xent_is_the_mean_of_both_directions() -> None:
    """Every one of the 2N sentences contributes its term: sources against their views, views
    against their sources (SimCLR's NT-Xent), which is the default."""
    assert TrainConfig(objective="generate-cse").generate_cse.nt_xent == "symmetric"
    loss = _generate_cse_loss("symmetric")
    got = loss.compute_loss_from_embeddings(tensors(ANCHOR, POSITIVE), None).item()
    from_anchors = nt_xent_reference(ANCHOR, POSITIVE)
    from_views = nt_xent_reference(POSITIVE, ANCHOR)
    assert from_anchors != pytest.approx(from_views)  # the example tells the two apart
    assert got == pytest.approx((from_anchors + from_views) / 2, rel=1e-6)


@pytest.mark.parametrize("objective", ["simcse-unsup", "simcse-sup", "ngcse"])
def test_infonce_sets_use_the_papers_temperature(objective: str) -> None:
    cfg = TrainConfig(objective=objective, temperature=0.1)
    losses = make_losses(cfg, torch.nn.Linear(1, 1), training_sets(cfg))
    infonce = [loss for name, loss in losses.items() if name in ("dropout", "triplets", "pattern")]
    assert infonce and all(loss.scale == pytest.approx(10.0) for loss in infonce)
    if objective == "simcse-sup":
        got = infonce[0].compute_loss_from_embeddings(tensors(ANCHOR, POSITIVE, NEGATIVE), None)
        expected = sum(
            -(cos(a, POSITIVE[i]) / 0.1 - math.log(sum(
                math.exp(cos(a, c) / 0.1) for c in POSITIVE + NEGATIVE)))
            for i, a in enumerate(ANCHOR)
        ) / len(ANCHOR)  # fmt: skip
        assert got.item() == pytest.approx(expected, rel=1e-6)


def test_training_sets_sharing_a_loss_share_one_instance() -> None:
    cfg = TrainConfig(objective="osscse")
    losses = make_losses(cfg, torch.nn.Linear(1, 1), training_sets(cfg))
    assert set(losses) == {"augmented", "dropout"}
    assert losses["augmented"] is losses["dropout"]  # one theta* for the recall loss
