"""The checks of one generated row's views against their anchor or each other: each returns
None (passed) or the reject's reason (docs/quality.md, "Per-row checks") and numbers.

Example:
    >>> unchanged("A man plays a guitar.", "A man plays a violin.", 0.95)
    >>> unchanged("A man plays a guitar.", "a man plays a guitar", 0.95)
    ('unchanged_view', {'similarity': 1.0, 'threshold': 0.95})
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rapidfuzz.distance import Indel

from cseaug.llm.clean import normalize_for_comparison
from cseaug.quality.language import Detection
from cseaug.text_hazards import find_control, find_invisible, find_special_token, tag_text

HIDDEN_INSTRUCTIONS = "hidden_instructions"
CONTROL_CHARACTERS = "control_characters"
INVISIBLE_CHARACTERS = "invisible_characters"
TOO_LONG = "too_long"
WRONG_LANGUAGE = "wrong_language"
IDENTICAL_VIEWS = "identical_views"
UNCHANGED_VIEW = "unchanged_view"
REASONS: tuple[str, ...] = (  # in the order the checks run
    HIDDEN_INSTRUCTIONS,
    CONTROL_CHARACTERS,
    INVISIBLE_CHARACTERS,
    TOO_LONG,
    WRONG_LANGUAGE,
    IDENTICAL_VIEWS,
    UNCHANGED_VIEW,
)
Failure = tuple[str, dict[str, Any]]  # a failed check's reason and the reject's detail

INSTRUCTION_PATTERN = re.compile(
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?"
    r"(?:previous|prior|above|earlier|preceding|original)\s+"
    r"(?:instructions?|prompts?|messages?|rules|directions|text)\b"
    r"|^\s*(?:system|assistant)\s*:"
    r"|\bnew\s+instructions?\s*:",
    re.IGNORECASE | re.MULTILINE,
)
"""Instructions addressed to a model rather than text about the world."""


def hidden_text(anchor: str, view: str) -> Failure | None:
    """``hidden_instructions``, ``control_characters`` or ``invisible_characters`` when
    ``view`` carries them (:mod:`cseaug.text_hazards`).

    Example:
        >>> hidden_text("A cat sleeps.", "A cat is asleep.\\U000e0068\\U000e0069")
        ('hidden_instructions', {'tag_text': 'hi'})
        >>> hidden_text("A cat sleeps.", "A cat\\u200b is asleep.")
        ('invisible_characters', {'characters': ['U+200B']})
        >>> hidden_text("A cat sleeps.", "A cat\\x1b[8m is asleep.")
        ('control_characters', {'characters': ['U+001B']})
    """
    spelled = tag_text(view)
    if spelled:
        return HIDDEN_INSTRUCTIONS, {"tag_text": spelled}
    token = find_special_token(view)
    if token is not None:
        return HIDDEN_INSTRUCTIONS, {"special_token": token.group()}
    instruction = INSTRUCTION_PATTERN.search(view)
    if instruction is not None and not INSTRUCTION_PATTERN.search(anchor):
        return HIDDEN_INSTRUCTIONS, {"instruction": instruction.group().strip()}
    control = find_control(view)
    if control:
        return CONTROL_CHARACTERS, {"characters": control}
    invisible = find_invisible(view)
    if invisible:
        return INVISIBLE_CHARACTERS, {"characters": invisible}
    return None


def beyond_max_tokens(view: str, max_tokens: int) -> Failure | None:
    """``too_long`` when ``view`` has more words than ``max_tokens`` tokens can write."""
    words = len(view.split())
    if words > max_tokens:
        return TOO_LONG, {"words": words, "max_tokens": max_tokens}
    return None


def other_language(anchor: Detection, view: Detection, confidence: float) -> Failure | None:
    """``wrong_language`` when the anchor and the view are each, with at least ``confidence``,
    in a different language (an unsure anchor, such as "(Applause)", is not compared)."""
    confident = min(anchor.probability, view.probability) >= confidence
    if confident and view.language != anchor.language:
        return WRONG_LANGUAGE, {
            "anchor_language": anchor.language,
            "anchor_probability": round(anchor.probability, 4),
            "view_language": view.language,
            "view_probability": round(view.probability, 4),
        }
    return None


def identical(views: Mapping[str, str]) -> Failure | None:
    """``identical_views`` when two of ``views`` (name → text) normalise to the same text.

    Example:
        >>> identical({"positive": "A dog runs.", "negative": "a dog runs"})
        ('identical_views', {'views': ['positive', 'negative']})
    """
    seen: dict[str, str] = {}
    for name, text in views.items():
        normal = normalize_for_comparison(text)
        if normal in seen:
            return IDENTICAL_VIEWS, {"views": [seen[normal], name]}
        seen[normal] = name
    return None


def similarity(anchor: str, view: str) -> float:
    """Normalised edit similarity (rapidfuzz Indel: 1 - insertions and deletions / both
    lengths) of the normalised texts (:func:`cseaug.llm.clean.normalize_for_comparison`)."""
    return Indel.normalized_similarity(
        normalize_for_comparison(anchor), normalize_for_comparison(view)
    )


LIGHT_WORDS = frozenset(
    ["a", "an", "the", "too", "also", "indeed", "really", "very", "just", "quite", "actually"]
)
"""Words whose addition or removal leaves a sentence's content as it was: articles and
additive or emphatic adverbs (negations are content). docs/quality.md, "Short anchors"."""


def content_words(text: str) -> list[str]:
    """The normalised words of ``text`` but :data:`LIGHT_WORDS`, in order.

    Example:
        >>> content_words("Yes, the 1960s too!")
        ['yes', '1960s']
    """
    return [word for word in normalize_for_comparison(text).split() if word not in LIGHT_WORDS]


def unchanged(anchor: str, view: str, threshold: float) -> Failure | None:
    """``unchanged_view`` when ``view`` has a :func:`similarity` of at least ``threshold`` to
    ``anchor``, or the same :func:`content_words` (a short anchor with an article added or
    "too" appended stays far below any edit-similarity threshold).

    Example:
        >>> unchanged("Jim Daly.", "Jim Daly too.", 0.95)
        ('unchanged_view', {'similarity': 0.8, 'threshold': 0.95, 'content_words': 'same'})
    """
    value = similarity(anchor, view)
    detail = {"similarity": round(value, 4), "threshold": threshold}
    if value >= threshold:
        return UNCHANGED_VIEW, detail
    if content_words(view) == content_words(anchor):
        return UNCHANGED_VIEW, {**detail, "content_words": "same"}
    return None
