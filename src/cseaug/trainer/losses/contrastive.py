"""The pieces the papers' losses share: cosine similarities and InfoNCE with in-batch negatives."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cseaug.errors import require

torch = require("torch", "hf", "Training a sentence encoder")
F = torch.nn.functional


def embed(model: Any, sentence_features: Iterable[dict[str, Any]]) -> list[Any]:
    """One embedding matrix per input column, through sentence-transformers' merged forward
    (one forward pass for all columns; every row gets its own dropout mask, so a column
    repeated is SimCSE's dropout positive)."""
    merged_forward = require(
        "sentence_transformers.base.losses.merged_forward", "hf", "Training a sentence encoder"
    )
    return merged_forward.embed_columns(model, list(sentence_features))


def cosine_matrix(a: Any, b: Any) -> Any:
    """cos(a_i, b_j) for every i, j: shape (len(a), len(b))."""
    return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T


def pairwise_cosine(a: Any, b: Any) -> Any:
    """cos(a_i, b_i) for every i: shape (len(a),)."""
    return F.cosine_similarity(a, b, dim=-1)


def info_nce(anchors: Any, candidates: Any, temperature: float) -> Any:
    """-log softmax of cos(anchor_i, candidate_i) / tau over every candidate, averaged over i.

    ``candidates`` holds the anchors' positives first (row i for anchor i), then any extra
    candidates (hard negatives): every other row is an in-batch negative, as in SimCSE.
    """
    logits = cosine_matrix(anchors, candidates) / temperature
    labels = torch.arange(len(anchors), device=anchors.device)
    return F.cross_entropy(logits, labels)
