"""Generation-quality scorecard of synonym generators (VAEGPT-Sim paper, section 4.1.2, Table
2): similarity to the target, diversity, and the average and deficiency scores, as fractions
(docs/vaegpt.md, "Generation quality scorecard", has the definitions the paper leaves open).

Example:
    >>> card = score_generations(["a man is cooking"], ["a man cooks"], [["a man is cooking food"]], encoder=None)
    >>> round(card.word_diversity_source, 3), card.diversity_multiple is None
    (0.2, True)
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from cseaug.encoders.base import Encoder
from cseaug.encoders.loading import DEFAULT_ENCODER, load_encoder
from cseaug.errors import InputError, require
from cseaug.metrics.cosine import cosine_pairs

_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words (the tokenisation of ``rouge-score``).

    Example:
        >>> words("A man, a plan!")
        ['a', 'man', 'a', 'plan']
    """
    return _WORD.findall(text.lower())


def word_distance(a: str, b: str) -> float:
    """Share of the distinct words of ``a`` and ``b`` that occur in only one of them (0 when both are empty).

    Example:
        >>> word_distance("a man is cooking", "a man cooks")
        0.6
    """
    left, right = set(words(a)), set(words(b))
    union = left | right
    return len(left ^ right) / len(union) if union else 0.0


def multiple_diversity(generations: Sequence[str]) -> float | None:
    """Mean :func:`word_distance` over every pair of generations of one source (None if fewer than 2)."""
    pairs = list(itertools.combinations(generations, 2))
    if not pairs:
        return None
    return float(np.mean([word_distance(a, b) for a, b in pairs]))


def type_token_ratio(text: str) -> float:
    """Distinct words / words (0 for a text without words).

    Example:
        >>> type_token_ratio("the cat and the hat")
        0.8
    """
    tokens = words(text)
    return len(set(tokens)) / len(tokens) if tokens else 0.0


def avg_rouge(generations: Sequence[str], targets: Sequence[str]) -> list[float]:
    """Mean of the ROUGE-1, ROUGE-2 and ROUGE-L F1 of each generation against its target.

    Example:
        >>> [round(score, 3) for score in avg_rouge(["a man cooks", "dogs"], ["a man cooks", "cats"])]
        [1.0, 0.0]
    """
    rouge_scorer = require("rouge_score.rouge_scorer", "hf", "Avg-ROUGE")
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    return [
        float(np.mean([score.fmeasure for score in scorer.score(target, generation).values()]))
        for generation, target in zip(generations, targets, strict=True)
    ]


def _mean_computed(*values: float | None) -> float:
    """The mean of the values that are not None."""
    return float(np.mean([v for v in values if v is not None]))


@dataclass
class Scorecard:
    """Table 2's metrics for one generator (fractions; None where a metric does not apply)."""

    avg_rouge: float
    cosine: float | None
    word_diversity_source: float
    diversity_multiple: float | None
    ttr: float
    pairs: int
    generations: int

    @property
    def similarity(self) -> float:
        return _mean_computed(self.avg_rouge, self.cosine)

    @property
    def diversity(self) -> float:
        return _mean_computed(self.word_diversity_source, self.diversity_multiple, self.ttr)

    @property
    def average(self) -> float:
        """The paper's Average Score: the mean of every metric computed."""
        return _mean_computed(
            self.avg_rouge,
            self.cosine,
            self.word_diversity_source,
            self.diversity_multiple,
            self.ttr,
        )

    @property
    def deficiency(self) -> float:
        """The paper's Deficiency Score: min(mean similarity, mean diversity)."""
        return min(self.similarity, self.diversity)

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            **asdict(self),
            "similarity": self.similarity,
            "diversity": self.diversity,
            "average": self.average,
            "deficiency": self.deficiency,
        }


def score_generations(
    sources: Sequence[str],
    targets: Sequence[str],
    generations: Sequence[Sequence[str]] | Sequence[str],
    encoder: str | Encoder | None = DEFAULT_ENCODER,
) -> Scorecard:
    """Score generations (one string or a list of candidates per source) against their
    sources and reference ``targets`` (section 4.1.2): similarity and source diversity average
    over every candidate, ``diversity_multiple`` over the sources with two or more. ``encoder``
    is a sentence-encoder name or path, an :class:`~cseaug.encoders.base.Encoder`, or None to
    leave cosine similarity out.

    Example:
        >>> card = score_generations(["a b c"], ["a b c"], ["a b c"], encoder=None)
        >>> card.avg_rouge, card.word_diversity_source, card.ttr
        (1.0, 0.0, 1.0)
    """
    if not (len(sources) == len(targets) == len(generations)):
        raise InputError(
            f"score_generations: {len(sources)} sources, {len(targets)} targets, {len(generations)} generations; "
            "give one target and one generation (or list of candidates) per source"
        )
    if not sources:
        raise InputError("score_generations: nothing to score (no sources)")
    candidates = [[g] if isinstance(g, str) else list(g) for g in generations]
    empty = [i for i, c in enumerate(candidates) if not c]
    if empty:
        raise InputError(f"score_generations: source(s) {empty[:5]} have no generation")
    flat = [(s, t, g) for s, t, cs in zip(sources, targets, candidates, strict=True) for g in cs]
    _, each_target, each_generation = zip(*flat, strict=True)  # one per generation
    cosine = None
    if encoder is not None:
        model = load_encoder(encoder) if isinstance(encoder, str) else encoder
        cosine = float(np.mean(cosine_pairs(each_generation, each_target, model)))
    multiple = [d for d in (multiple_diversity(cs) for cs in candidates) if d is not None]
    return Scorecard(
        avg_rouge=float(np.mean(avg_rouge(each_generation, each_target))),
        cosine=cosine,
        word_diversity_source=float(np.mean([word_distance(s, g) for s, _, g in flat])),
        diversity_multiple=float(np.mean(multiple)) if multiple else None,
        ttr=float(np.mean([type_token_ratio(g) for g in each_generation])),
        pairs=len(sources),
        generations=len(flat),
    )
