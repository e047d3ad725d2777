"""Match Error Rate (OssCSE eq. 1; Morris et al. 2004) over words, batched.

MER = (S + D + I) / (S + D + I + C), with S, D, I, C the substitutions, deletions,
insertions and correct words of a minimal word alignment. One normalisation is used
everywhere in the project: :func:`normalize_words`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein


def normalize_words(text: str) -> list[str]:
    """Lower-cased, whitespace-split words (the project's one MER normalisation)."""
    return text.lower().split()


def mer_words(reference: Sequence[str], hypothesis: Sequence[str]) -> float:
    """MER of two already normalised word lists; 0.0 when both are empty."""
    if not reference and not hypothesis:
        return 0.0
    errors = hits = 0
    for tag, i1, i2, j1, j2 in Levenshtein.opcodes(list(reference), list(hypothesis)):
        if tag == "equal":
            hits += i2 - i1
        else:
            errors += max(i2 - i1, j2 - j1)
    return errors / (errors + hits)


def mer(reference: str, hypothesis: str) -> float:
    """MER of two strings under :func:`normalize_words`."""
    return mer_words(normalize_words(reference), normalize_words(hypothesis))


def mer_pairs(references: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
    """Per-pair MER of two equally long sequences of strings, as float64 (NaN where either is None)."""
    if len(references) != len(hypotheses):
        raise ValueError(f"mer_pairs: {len(references)} references but {len(hypotheses)} hypotheses")
    out = np.empty(len(references), dtype=np.float64)
    for i, (ref, hyp) in enumerate(zip(references, hypotheses, strict=True)):
        out[i] = np.nan if ref is None or hyp is None else mer(ref, hyp)
    return out
