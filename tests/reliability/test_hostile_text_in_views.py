"""Hostile characters and light edits in answers: nothing of the class reaches a view.

Each test covers a class of characters as Unicode defines it, iterating over every code point
the rule names (read from ``unicodedata`` and the ``regex`` module's tables, not from the
code under test), through the path an answer takes: answer cleaning (``llm/clean.py``), then
the per-row checks (``quality/checks.py``); the corpus side through ``clean_batch``. The
rules: docs/quality.md, "Text hazards" and "Short anchors".
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pyarrow as pa
import pytest
import regex

from cseaug.config import CleaningConfig
from cseaug.corpus.cleaning import clean_batch
from cseaug.llm.clean import clean_answer
from cseaug.quality import checks
from tests.quality.sts_pairs import wiki_sentences

pytestmark = pytest.mark.reliability

ANCHOR = "A black and white dog is running through a snowy field."
EVERY = [chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
CONTROL = [ch for ch in EVERY if unicodedata.category(ch) in ("Cc", "Zl", "Zp")]
WHITESPACE = [ch for ch in EVERY if regex.match(r"\p{White_Space}", ch) and ch != " "]
# Unicode's mandatory line breaks (str.splitlines adds U+001C-U+001E, control characters)
LINE_BREAKS = [
    ch for ch in EVERY if regex.match(r"\p{Line_Break=BK}|\p{lb=CR}|\p{lb=LF}|\p{lb=NL}", ch)
]
_IGNORABLE = regex.compile(r"\p{Default_Ignorable_Code_Point}")
_MARK = regex.compile(r"\p{Prepended_Concatenation_Mark}")
INVISIBLE = [
    ch
    for ch in EVERY
    if (_IGNORABLE.match(ch) or unicodedata.category(ch) == "Cf" or ch == "\u2800")
    and not _MARK.match(ch)
    and ch not in "\u200c\u200d"  # the joiners: needed inside words, trimmed at the edges
]


def published(raw: str, anchor: str = ANCHOR, view: str = "negative") -> tuple[str | None, str]:
    """The view a build publishes for the answer ``raw`` (None when rejected) and the reason."""
    cleaned = clean_answer(raw, view=view, source_sentence=anchor, cfg=CleaningConfig())
    if not cleaned.ok:
        return None, str(cleaned.reason)
    failed = checks.hidden_text(anchor, cleaned.text)
    return (None, failed[0]) if failed else (cleaned.text, "")


def code(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def test_every_control_and_separator_character_is_rejected_or_breaks_the_line() -> None:
    """Every Cc, Zl and Zp character (NUL, BEL, ESC, DEL, U+009B, U+2028, ...): a line break
    or a space where Unicode says it is one, so the view keeps none of them; a rejected
    ``control_characters`` view otherwise, never silently removed."""
    assert len(CONTROL) == 67
    for ch in CONTROL:
        text, reason = published(f"A cat sleeps on{ch} the warm sofa all day.")
        if ch in LINE_BREAKS or ch in WHITESPACE:
            assert text is not None and ch not in text, code(ch)
        else:
            assert (text, reason) == (None, "control_characters"), code(ch)
    text, reason = published("A cat sleeps on the \x1b[8mwarm sofa\x1b[0m all day.")
    assert (text, reason) == (None, "control_characters")


def test_every_whitespace_character_becomes_one_space() -> None:
    """No-break, ideographic and every other space of the White_Space property: the view
    holds plain spaces only (a line break ends the view's line)."""
    for ch in WHITESPACE:
        text, _ = published(f"A cat sleeps on{ch}{ch}the warm sofa all day.")
        expected = (
            "A cat sleeps on" if ch in LINE_BREAKS else "A cat sleeps on the warm sofa all day."
        )
        assert text == expected, code(ch)


def test_every_invisible_character_is_rejected() -> None:
    """Every default-ignorable and format (Cf) character and the Braille blank, joiners aside:
    the view is rejected (tag characters as hidden instructions, the others as invisible)."""
    assert len(INVISIBLE) > 4000
    for ch in INVISIBLE:
        text, reason = published(f"A cat sleeps on the{ch} warm sofa all day.")
        assert text is None and reason in ("invisible_characters", "hidden_instructions"), code(ch)


def test_the_corpus_rejects_and_folds_the_same_classes() -> None:
    """One definition on both sides: a corpus line with a control character is rejected
    (``control_characters``), whitespace and separators become one space, invisible
    characters are removed (``corpus.invisible_characters: remove``)."""
    hostile = sorted(set(CONTROL + WHITESPACE + INVISIBLE))
    lines = [f"A cat sleeps on{ch} the warm sofa.".encode() for ch in hostile]
    out = clean_batch(
        pa.RecordBatch.from_arrays([pa.array(lines)], ["text"]), 1, min_chars=1, max_chars=200
    )
    rejected = {r["raw"][15]: r["reason"] for r in out.rejects.to_pylist()}
    kept = out.kept.column("sentence").to_pylist()
    for ch in hostile:
        if ch in WHITESPACE or ch in LINE_BREAKS:
            assert ch not in rejected, code(ch)
        elif ch in CONTROL:
            assert rejected.get(ch) == "control_characters", code(ch)
    assert set(kept) == {"A cat sleeps on the warm sofa."}
    assert len(kept) + len(rejected) == len(hostile)


@pytest.mark.parametrize(
    "raw",
    [
        '"A cat sleeps on the warm sofa."',
        '"A cat sleeps on the warm sofa".',
        "'A cat sleeps on the warm sofa.'",
        "“A cat sleeps on the warm sofa.”",
        "«A cat sleeps on the warm sofa.»",
        "„A cat sleeps on the warm sofa.“",
        "「A cat sleeps on the warm sofa.」",
        'Revised sentence: "A cat sleeps on the warm sofa."',
        '**"A cat sleeps on the warm sofa."**',
        '  "A cat sleeps on the warm sofa."\n',
    ],
)
def test_an_answer_wrapped_in_quotes_is_published_without_them(raw: str) -> None:
    assert published(raw) == ("A cat sleeps on the warm sofa.", "")


def test_quotes_inside_an_answer_stay() -> None:
    for raw in ("'The dog's bowl is empty.'", '"Snow" and "ice" cover the "old" field.'):
        text, _ = published(raw)
        assert text == raw.strip("'") if raw.startswith("'") else text == raw


@pytest.mark.parametrize(
    "edit",
    [
        lambda a: f"The {a}",
        lambda a: f"{a.rstrip('.')} too.",
        lambda a: f"{a.rstrip('.')}, also!",
        lambda a: f"“{a.upper()}”",
    ],
    ids=["article added", "too appended", "also appended", "upper case and quotes"],
)
def test_light_edits_of_short_anchors_are_unchanged_views(shared_data: Path, edit) -> None:
    """Every anchor of one to four words among the first 2,000 wiki1m lines (names, years,
    fragments: 11 % of the sample): a view that only adds an article or "too" to it is the
    anchor unchanged, although its edit similarity stays far below 0.95."""
    short = [s for s in wiki_sentences(shared_data, 2000) if len(s.split()) <= 4]
    assert len(short) > 100
    for anchor in short:
        failed = checks.unchanged(anchor, edit(anchor), 0.95)
        assert failed is not None and failed[0] == "unchanged_view", anchor
