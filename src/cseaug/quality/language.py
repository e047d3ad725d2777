"""Which language a text is in: py3langid, its model loaded once per process (docs/quality.md,
"Language"); :class:`LanguageDetector` detects views ahead while a build's LLM still answers.

Example:
    >>> detect(["A small bakery near the station sells bread.",
    ...         "Eine kleine Bäckerei in der Nähe des Bahnhofs verkauft Brot."])  # doctest: +ELLIPSIS
    [Detection(language='en', probability=...), Detection(language='de', probability=...)]
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
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


class LanguageDetector:
    """:func:`detect`, with texts handed over ahead (:meth:`prefetch`) detected meanwhile in a
    background thread, which closing stops.

    Example:
        >>> detector = LanguageDetector()
        >>> detector.prefetch(["A small bakery near the station sells bread."])
        >>> detector.detect(["A small bakery near the station sells bread."])[0].language
        'en'
        >>> detector.close()
    """

    def __init__(self) -> None:
        self._ahead: dict[str, Detection] = {}
        self._worker: ThreadPoolExecutor | None = None
        self._last: Future[None] | None = None  # the latest hand-over (the thread works in order)

    def prefetch(self, texts: Sequence[str]) -> None:
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="cseaug-language")
        self._last = self._worker.submit(self._detect_ahead, list(texts))

    def detect(self, texts: Sequence[str]) -> list[Detection]:
        """The language of each text: those handed over ahead (each taken once) once the
        thread has worked through them, the others now."""
        if self._last is not None:  # once done, everything handed over before it is done too
            self._last.result()
            self._last = None
        found = [self._ahead.pop(text, None) for text in texts]
        missing = [text for text, known in zip(texts, found, strict=True) if known is None]
        detected = iter(detect(missing)) if missing else iter(())
        return [known if known is not None else next(detected) for known in found]

    def close(self) -> None:
        if self._worker is not None:
            self._worker.shutdown(wait=False, cancel_futures=True)
            self._worker = self._last = None
        self._ahead.clear()

    def _detect_ahead(self, texts: list[str]) -> None:
        self._ahead.update(zip(texts, detect(texts), strict=True))
