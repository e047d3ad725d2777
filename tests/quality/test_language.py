"""The language check on real sentences: English pairs pass, translations are rejected, at the
default ``quality.language_confidence`` (docs/quality.md, "Language")."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.config import QualityConfig
from cseaug.quality.checks import other_language
from cseaug.quality.language import LanguageDetector, detect
from tests.quality.demo_views import FRENCH, GERMAN, SPANISH
from tests.quality.sts_pairs import sts_pairs
from tests.reliability.attack_tools import REPO

CONFIDENCE = QualityConfig().language_confidence
DEMO = (REPO / "examples" / "demo_corpus.txt").read_text(encoding="utf-8").splitlines()[:12]


def test_real_english_pairs_are_never_rejected(shared_data: Path) -> None:
    """STS-B train and STS12 train: 7,983 pairs of English sentences, many short or odd
    ("(Applause)", headlines); none is put in two different languages."""
    pairs = sts_pairs(shared_data)
    anchors, views = detect([a for _, a, _ in pairs]), detect([b for _, _, b in pairs])
    rejected = [
        pair
        for pair, a, v in zip(pairs, anchors, views, strict=True)
        if other_language(a, v, CONFIDENCE) is not None
    ]
    assert len(pairs) > 7000
    assert rejected == []


@pytest.mark.parametrize(
    ("language", "translations"), [("de", GERMAN), ("fr", FRENCH), ("es", SPANISH)]
)
def test_a_translation_of_the_anchor_is_rejected(
    language: str, translations: tuple[str, ...]
) -> None:
    for anchor, view in zip(detect(DEMO), detect(list(translations)), strict=True):
        failed = other_language(anchor, view, CONFIDENCE)
        assert failed is not None and failed[1]["view_language"] == language
        assert failed[1]["anchor_language"] == "en"


def test_detection_reads_the_english_anchors_as_english() -> None:
    assert {d.language for d in detect(DEMO)} == {"en"}


def test_the_detector_gives_what_detect_gives_for_texts_handed_over_ahead_or_not() -> None:
    """Texts handed over ahead (one of them twice, one asked for twice in one call) and texts
    never handed over come back in order, each as :func:`detect` reads it."""
    ahead, asked = DEMO[:6], [DEMO[0], DEMO[0], *DEMO[5:], *GERMAN[:2]]
    detector = LanguageDetector()
    try:
        detector.prefetch(ahead)
        detector.prefetch(ahead[:1])
        assert detector.detect(asked) == detect(asked)
        assert detector.detect(ahead) == detect(ahead)  # taken once: detected again, the same
    finally:
        detector.close()
