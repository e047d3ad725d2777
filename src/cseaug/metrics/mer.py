"""Match Error Rate (OssCSE eq. 1; Morris et al. 2004) over words: MER = (S + D + I) /
(S + D + I + C) over rapidfuzz's Levenshtein alignment, the values of ``jiwer.mer`` without
its per-call overhead, on words normalised one way everywhere (:func:`normalize_words`;
docs/osscse.md, "Match Error Rate").

Example:
    >>> mer("Bryan Cranston will return.", "Bryan Cranston will not return")
    0.2
"""

from __future__ import annotations

import functools
import sys
import unicodedata
from collections.abc import Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein


@functools.cache
def punctuation() -> tuple[str, frozenset[str]]:
    """Every Unicode punctuation character (categories P*), as a string and as a set, built
    on first use (~0.3 s)."""
    chars = "".join(
        c for c in map(chr, range(sys.maxunicode + 1)) if unicodedata.category(c).startswith("P")
    )
    return chars, frozenset(chars)


def normalize_words(text: str) -> list[str]:
    """The project's one MER normalisation: lower-cased words, edge punctuation stripped,
    punctuation-only tokens dropped (``"..."`` gives ``[]``).

    Example:
        >>> normalize_words('He said: "Spin-off, (2010)!"')
        ['he', 'said', 'spin-off', '2010']
    """
    chars, char_set = punctuation()
    words = []
    for word in text.lower().split():
        # Checking both ends first keeps the common case (no edge punctuation) cheap.
        if word[0] in char_set or word[-1] in char_set:
            word = word.strip(chars)
            if not word:
                continue
        words.append(word)
    return words


def mer_words(reference: Sequence[str], hypothesis: Sequence[str]) -> float:
    """MER of two normalised word lists: 0.0 when both are empty, 1.0 when exactly one is.

    Example:
        >>> mer_words(["a", "b"], ["b", "c"])
        1.0
    """
    if not reference and not hypothesis:
        return 0.0
    errors = hits = 0
    for tag, i1, i2, j1, j2 in Levenshtein.opcodes(reference, hypothesis):
        if tag == "equal":
            hits += i2 - i1
        else:
            # 'replace' spans the same length on both sides; 'delete' / 'insert' one side.
            errors += max(i2 - i1, j2 - j1)
    return errors / (errors + hits)


def mer(reference: str, hypothesis: str) -> float:
    """MER of two strings under :func:`normalize_words`.

    Example:
        >>> round(mer("Report claims.", "A latest report claims"), 2)
        0.5
    """
    return mer_words(normalize_words(reference), normalize_words(hypothesis))


def mer_pairs(references: Sequence[str | None], hypotheses: Sequence[str | None]) -> np.ndarray:
    """Per-pair MER (float64) of two equally long sequences of strings, NaN where either is None.

    Example:
        >>> mer_pairs(["a b", "x", None], ["a c", "", "y"]).tolist()
        [0.5, 1.0, nan]
    """
    if len(references) != len(hypotheses):
        raise ValueError(
            f"mer_pairs: {len(references)} references but {len(hypotheses)} hypotheses; "
            "pass two sequences of the same length"
        )
    out = np.empty(len(references), dtype=np.float64)
    for i, (ref, hyp) in enumerate(zip(references, hypotheses, strict=True)):
        if ref is None or hyp is None:
            out[i] = np.nan
        elif ref == hyp:
            out[i] = 0.0
        else:
            out[i] = mer_words(normalize_words(ref), normalize_words(hyp))
    return out
