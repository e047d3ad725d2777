"""Measurements behind the per-row checks' thresholds (docs/quality.md, "Per-row checks").

Not a speed benchmark (no RATIO line): it prints the figures that chose
``quality.language_confidence`` and ``quality.unchanged_view_similarity``, on real sentences
of ``../shared/data``:

* language: how fast py3langid reads a sentence; of the STS-B train and STS12 train pairs
  (both sentences English), how many the check would reject at each threshold; of
  hand-written German, French and Spanish translations of the demo corpus
  (``tests.quality.demo_views.py``) against their English originals, how many it catches;
* near-identical views: the normalised edit similarity of real STS pairs by gold score (an
  NGCSE intermediate or negative lies below 3), and of light edits of the demo corpus
  (case and punctuation dropped; an article added and the full stop made an exclamation
  mark; the longest word inflected).

Usage:
    python benchmarks/measure_row_checks.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests/quality: the translations and the pair readers

from cseaug.quality.checks import other_language, similarity  # noqa: E402
from cseaug.quality.language import detect  # noqa: E402
from tests.quality.demo_views import FRENCH, GERMAN, SPANISH  # noqa: E402
from tests.quality.sts_pairs import sts_pairs, wiki_sentences  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
LANGUAGE_THRESHOLDS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)
SIMILARITY_THRESHOLDS = (0.85, 0.9, 0.95)


def light_edits(sentence: str) -> list[str]:
    """What a model that returns the anchor "lightly edited" writes."""
    words = sentence.rstrip(".").split()
    longest = max(range(len(words)), key=lambda i: len(words[i]))
    inflected = [w + "s" if i == longest else w for i, w in enumerate(words)]
    return [
        sentence.lower().rstrip("."),
        " ".join([*words[:1], "the", *words[1:]]) + "!",
        " ".join(inflected) + ".",
    ]


def language() -> None:
    pairs = [(a, b) for _, a, b in sts_pairs(SHARED)]
    wiki = wiki_sentences(SHARED, 1000)
    detect(wiki[:1])  # load the model
    started = time.perf_counter()
    found = detect(wiki)
    per_sentence = (time.perf_counter() - started) / len(wiki) * 1e3
    english = sum(d.language == "en" for d in found)
    print(f"py3langid: {per_sentence:.3f} ms per sentence; {english} of 1000 wiki sentences 'en'")
    anchors, views = detect([a for a, _ in pairs]), detect([b for _, b in pairs])
    demo = (REPO / "examples" / "demo_corpus.txt").read_text(encoding="utf-8").splitlines()
    for threshold in LANGUAGE_THRESHOLDS:
        wrong = sum(
            other_language(a, v, threshold) is not None for a, v in zip(anchors, views, strict=True)
        )
        caught = {}
        for name, translations in (("de", GERMAN), ("fr", FRENCH), ("es", SPANISH)):
            original, translated = detect(demo[: len(translations)]), detect(list(translations))
            caught[name] = sum(
                other_language(a, v, threshold) is not None
                for a, v in zip(original, translated, strict=True)
            )
        print(
            f"language_confidence {threshold}: {wrong} of {len(pairs)} English pairs rejected; "
            f"translations caught (of 12 each): {caught}"
        )


def near_identical() -> None:
    pairs = sts_pairs(SHARED)
    scores = np.array([score for score, _, _ in pairs])
    values = np.array([similarity(a, b) for _, a, b in pairs])
    for low, high in ((0, 1), (1, 2), (2, 3), (3, 4), (4, 5.01)):
        band = values[(scores >= low) & (scores < high)]
        shares = ", ".join(f">= {t}: {np.mean(band >= t):.2%}" for t in SIMILARITY_THRESHOLDS)
        print(
            f"STS score [{low}, {min(high, 5)}]: {band.size} pairs, similarity median "
            f"{np.median(band):.3f}, max {band.max():.3f}; {shares}"
        )
    demo = (REPO / "examples" / "demo_corpus.txt").read_text(encoding="utf-8").splitlines()
    edits = np.array([similarity(s, e) for s in demo for e in light_edits(s)])
    shares = ", ".join(f">= {t}: {np.mean(edits >= t):.2%}" for t in SIMILARITY_THRESHOLDS)
    print(
        f"light edits of the demo corpus: {edits.size}, similarity min {edits.min():.3f}; {shares}"
    )


if __name__ == "__main__":
    language()
    near_identical()
