"""The pieces the papers' losses share: cosine similarities, InfoNCE with in-batch negatives,
and :class:`PaperLoss`, what makes a paper's loss a sentence-transformers loss.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar

from cseaug.dataset.card import CITATIONS
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
    """cos(a_i, b_j) for every i, j."""
    return F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T


def info_nce(anchors: Any, candidates: Any, temperature: float) -> Any:
    """-log softmax of cos(anchor_i, candidate_i) / tau over every candidate, averaged over i.

    ``candidates`` holds the anchors' positives first (row i for anchor i), then any extra
    candidates (hard negatives): every other row is an in-batch negative, as in SimCSE.
    """
    logits = cosine_matrix(anchors, candidates) / temperature
    labels = torch.arange(len(anchors), device=anchors.device)
    return F.cross_entropy(logits, labels)


class PaperLoss(torch.nn.Module, ABC):
    """A paper's loss on the embeddings of a training set's columns (:meth:`loss`), with its
    settings (``config_keys``: ``temperature``, tau of its InfoNCE terms, and the settings
    whose defaults the class declares, which keyword arguments replace) and the paper's
    citation for the model card."""

    paper: ClassVar[str]  # its key in cseaug.dataset.card.CITATIONS
    config_keys: ClassVar[tuple[str, ...]]  # the settings the model card lists

    def __init__(self, model: Any, temperature: float = 0.05, **settings: Any) -> None:
        super().__init__()
        unknown = sorted(set(settings) - set(self.config_keys))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no setting(s) {unknown}")
        self.model = model
        self.temperature = temperature
        for key, value in settings.items():
            setattr(self, key, value)

    def forward(self, sentence_features: Iterable[dict[str, Any]], labels: Any = None) -> Any:
        return self.loss(*embed(self.model, sentence_features))

    @abstractmethod
    def loss(self, *embeddings: Any) -> Any:
        """The batch's mean loss from its embeddings, one matrix per column."""

    def get_config_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in self.config_keys}

    @property
    def citation(self) -> str:
        return CITATIONS[self.paper]
