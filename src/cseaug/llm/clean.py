"""Cleaning and validation of LLM answers before they become views.

An answer is first tidied (echoed labels such as "Hypothesis:" or "Sentence 2:", list
numbering, markdown emphasis, surrounding quotes, preamble lines such as "Here is the
revised sentence:"), then checked. A rejected answer keeps a short, stable reason code
that goes to ``rejects.parquet``:

==================== =======================================================================
``empty``            nothing is left after tidying
``refusal``          the answer refuses or talks about itself ("I'm sorry, but", "As an AI")
``identical_to_input`` same as the sentence it was written from, ignoring case, spaces, punctuation
``too_short``        fewer words than ``min_length_ratio`` × the input (sentence views only)
``too_long``         more words than ``max_length_ratio`` × the input (sentence views only)
``llm_error``        the backend returned an error instead of an answer (set by the stages)
==================== =======================================================================

Sentence views (positive, intermediate, negative) keep the first non-empty line that is
not an echo of the input ("Premise: ...", "Sentence 1: ..."). The ``knowledge`` view
(SKICSE) keeps every line, joined into one line, cut to ``knowledge_max_sentences``
sentences (SKICSE's prompt asks for "no more than four sentences").

A refusal pattern that also matches the input sentence is ignored, so that "I cannot swim."
is a valid contradiction of "I can swim." but "I'm sorry, but I can't help with that." is not
a valid anything.

Example:
    >>> from cseaug.config import CleaningConfig
    >>> clean_answer('**Hypothesis:** "A dog is outside."', view="positive",
    ...              source_sentence="A black and white dog is running through a snowy field.",
    ...              cfg=CleaningConfig())
    Cleaned(text='A dog is outside.', reason=None)
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from cseaug.config import CleaningConfig

EMPTY = "empty"
REFUSAL = "refusal"
IDENTICAL = "identical_to_input"
TOO_SHORT = "too_short"
TOO_LONG = "too_long"
LLM_ERROR = "llm_error"
REASONS: tuple[str, ...] = (EMPTY, REFUSAL, IDENTICAL, TOO_SHORT, TOO_LONG, LLM_ERROR)

KNOWLEDGE_VIEW = "knowledge"

_CANNOT = r"(?:cannot|can['’]t|can not|won['’]t|will not|am unable to|['’]m unable to|am not able to|['’]m not able to)"
_REQUEST_VERBS = (
    r"(?:assist|comply|fulfil|fulfill|generate|help with (?:this|that|your)"
    r"|(?:provide|create|write|complete|produce|answer)\b.{0,40}?\b(?:request|task|response|content|prompt))"
)
REFUSAL_PATTERNS: tuple[str, ...] = (
    r"^\s*(?:I['’]m|I am)\s+(?:sorry|afraid)\s*(?:,|but\b|I\b|that I\b)",
    r"^\s*(?:sorry|apologies)\s*[,!.]",
    r"\bI apologi[sz]e\b",
    r"\bas an?\s+(?:AI|artificial intelligence|(?:AI\s+)?language model|large language model|AI assistant)\b",
    rf"^\s*I\s*{_CANNOT}\s+{_REQUEST_VERBS}",
    r"\b(?:violates?|against)\s+(?:my|the|our)\s+(?:guidelines|polic(?:y|ies)|content polic(?:y|ies)|usage polic(?:y|ies))\b",
)
"""Default refusal patterns (case-insensitive; ``^`` anchors at any line start)."""

# "Hypothesis:", "Sentence 2:", "Revised sentence:", "Positive:", "New sentence 1:", ...
_LABEL = re.compile(
    r"^(?:(?:the\s+)?(?:generated|new|revised|rewritten|output|final|positive|negative|intermediate|"
    r"contradict(?:ing|ory)|entail(?:ed|ment)|similar|paraphrased?)\s+)?"
    r"(?:hypothesis|sentence(?:\s*\d+)?|answer|output|response|result|paraphrase|positive|negative|"
    r"intermediate|contradiction|entailment|knowledge|ski)\s*(?:\(.{0,40}?\))?\s*:\s*",
    re.IGNORECASE,
)
# Lines that repeat the input rather than answer: "Premise: ...", "Sentence 1: ...", "Input: ...".
_ECHO = re.compile(
    r"^(?:premise|sentence\s*1|input(?:\s+sentence)?|original(?:\s+sentence)?)\s*:", re.IGNORECASE
)
# Chatty openings: "Sure, I'd be happy to help!", "Here is the revised sentence:", "Example 4:".
_PREAMBLE = re.compile(
    r"^(?:(?:sure(?!\s+enough)|certainly|of course|okay|ok)\b[^.!?:\n]*[.!?:]\s*"
    r"|here(?:\s+is|\s+are|['’]s)\b[^:\n]*:\s*"
    r"|example\s*\d*\s*:\s*$)",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^(?:[-*•]\s+|\d+\s*[.)]\s+|\(\d+\)\s+)")
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
_FENCE = re.compile(r"^`{3}.*$")
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "`": "`"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“(\[]?[A-Z0-9])")


@dataclass(frozen=True)
class Cleaned:
    """A cleaned answer (``text``) or why it was rejected (``reason``, one of :data:`REASONS`)."""

    text: str | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.reason is None


def normalize_for_comparison(text: str) -> str:
    """Case-folded words without punctuation, single-spaced (for the ``identical_to_input`` check).

    Example:
        >>> normalize_for_comparison("  A Dog, running!  ")
        'a dog running'
    """
    kept = "".join(
        " " if unicodedata.category(ch).startswith("P") else ch for ch in text.casefold()
    )
    return " ".join(kept.split())


def _unquote(text: str) -> str:
    while len(text) >= 2 and text[0] in _QUOTES and text[-1] == _QUOTES[text[0]]:
        inner = text[1:-1].strip()
        # '"a" and "b"' is not one quoted string
        if text[0] in inner and _QUOTES[text[0]] == text[0]:
            break
        text = inner
    return text


def _tidy_line(line: str) -> str:
    line = _EMPHASIS.sub(r"\2", line.strip())
    for _ in range(3):  # "1. **Hypothesis:** ..." takes a few passes
        before = line
        line = _BULLET.sub("", line).strip()
        line = _PREAMBLE.sub("", line).strip()
        line = _LABEL.sub("", line).strip()
        line = _unquote(line)
        if line == before:
            break
    return line


def _content_lines(raw: str) -> list[str]:
    lines = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        stripped = line.strip()
        if not stripped or _FENCE.match(stripped):
            continue
        unbulleted = _BULLET.sub("", _EMPHASIS.sub(r"\2", stripped)).strip()
        if _ECHO.match(unbulleted):
            continue
        tidy = _tidy_line(stripped)
        if tidy:
            lines.append(tidy)
    return lines


def _is_refusal(raw: str, source_sentence: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        regex = re.compile(pattern, re.IGNORECASE | re.MULTILINE)
        if regex.search(raw) and not regex.search(source_sentence):
            return True
    return False


def clean_answer(
    raw: str | None, *, view: str, source_sentence: str, cfg: CleaningConfig
) -> Cleaned:
    """Tidy one LLM answer and validate it against the sentence it was written from.

    Args:
        raw: the answer text.
        view: ``positive``, ``intermediate``, ``negative`` or ``knowledge``.
        source_sentence: the user input of the prompt (the anchor, or the positive when
            views are derived from it).
        cfg: the ``cleaning`` section of the run config.

    Returns:
        :class:`Cleaned` with ``text`` set, or with ``reason`` set and ``text`` None.

    Example:
        >>> from cseaug.config import CleaningConfig
        >>> clean_answer("I'm sorry, but I can't do that.", view="negative",
        ...              source_sentence="A man plays a guitar.", cfg=CleaningConfig()).reason
        'refusal'
    """
    if raw is None or not raw.strip():
        return Cleaned(None, EMPTY)
    lines = _content_lines(raw)
    # tidied lines too: "1. **I'm sorry, but ...**" refuses as much as the bare text
    checked = "\n".join([raw, *lines])
    if _is_refusal(checked, source_sentence, [*REFUSAL_PATTERNS, *cfg.extra_refusal_patterns]):
        return Cleaned(None, REFUSAL)
    if not lines:
        return Cleaned(None, EMPTY)
    if view == KNOWLEDGE_VIEW:
        sentences = _SENTENCE_END.split(" ".join(lines))
        text = " ".join(sentences[: cfg.knowledge_max_sentences])
    else:
        text = lines[0]
    if normalize_for_comparison(text) == normalize_for_comparison(source_sentence):
        return Cleaned(None, IDENTICAL)
    if view != KNOWLEDGE_VIEW:
        words, input_words = len(text.split()), max(1, len(source_sentence.split()))
        if words < cfg.min_length_ratio * input_words:
            return Cleaned(None, TOO_SHORT)
        if words > cfg.max_length_ratio * input_words:
            return Cleaned(None, TOO_LONG)
    return Cleaned(text)
