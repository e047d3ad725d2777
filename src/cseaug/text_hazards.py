"""Text that must not reach a prompt or a dataset: invisible characters and chat special tokens.

Defined once for corpus cleaning (:mod:`cseaug.corpus.cleaning`, Arrow/RE2), answer cleaning
(:mod:`cseaug.llm.clean`) and the per-row checks (:mod:`cseaug.quality.checks`).
**Invisible characters** (:func:`invisible_ranges`) are Unicode's
``Default_Ignorable_Code_Point`` property, read from the ``regex`` module's tables, except
the joiners U+200C/U+200D that scripts and emoji need inside words (:data:`EDGE_JOINERS`);
the tag characters among them spell ASCII invisibly (:func:`tag_text`). **Chat special
tokens** (:data:`SPECIAL_TOKEN_PATTERN`) are chat-template control words written as text.
docs/prompts-and-patterns.md, "Answer cleaning", says what each class lets an attacker do.

Example:
    >>> remove_invisible("Pay\\u200b\\u202epal")
    'Paypal'
    >>> find_invisible("A\\u00adB\\U000e0041")
    ['U+00AD', 'U+E0041']
    >>> find_special_token("A dog runs.<|im_end|>junk").group()
    '<|im_end|>'
"""

from __future__ import annotations

import array
import functools
import re
import sys

import regex

DEFAULT_IGNORABLE = r"\p{Default_Ignorable_Code_Point}"
"""The Unicode property of the invisible characters (``regex`` module syntax)."""

TAG_CHARACTERS = (0xE0000, 0xE007F)
"""The tag block (inclusive): default-ignorable, and each of U+E0020–U+E007E spells the
ASCII character 0xE0000 below it."""

EDGE_JOINERS = "\u200c\u200d"
"""Zero-width non-joiner and joiner: kept inside a line, trimmed at its edges."""


@functools.cache
def invisible_ranges() -> tuple[tuple[int, int], ...]:
    """The code point ranges (inclusive) of every default-ignorable character but the joiners
    of :data:`EDGE_JOINERS`: what cleaning removes from, or rejects, a line.

    Read from the ``regex`` module's tables of the Unicode version it ships, once per process
    (under 0.1 s): every code point is scanned, none is listed here.
    """
    code_points = array.array("I", range(0xD800))  # surrogates are not characters
    code_points.extend(range(0xE000, 0x110000))
    every = code_points.tobytes().decode("utf-32-le" if sys.byteorder == "little" else "utf-32-be")
    ranges = []
    for match in regex.finditer(DEFAULT_IGNORABLE + "+", every):
        lo, hi = ord(match.group()[0]), ord(match.group()[-1])
        for joiner in sorted(map(ord, EDGE_JOINERS)):
            if lo <= joiner <= hi:  # cut the joiners out of their range
                if lo < joiner:
                    ranges.append((lo, joiner - 1))
                lo = joiner + 1
        if lo <= hi:
            ranges.append((lo, hi))
    return tuple(ranges)


@functools.cache
def invisible_pattern() -> str:
    """A character class of :func:`invisible_ranges` (literal characters: valid in RE2 and ``re``)."""
    return "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in invisible_ranges()) + "]"


SPECIAL_TOKEN_PATTERN = (
    r"<\|[A-Za-z0-9_.:-]{1,40}\|>"  # ChatML, GPT, Llama 3, Phi: <|im_end|>, <|eot_id|>
    r"|\[/?INST\]"  # Llama 2, Mistral
    r"|<</?SYS>>"  # Llama 2 system block
    r"|<(?:start|end)_of_turn>"  # Gemma
    r"|</?s>"  # sentence-piece begin / end of sequence written out
    r"|<｜[^｜<>]{1,40}｜>"  # DeepSeek (full-width bars)
)
"""Chat special tokens written as text (bounded repeats only: safe in ``re`` and RE2)."""

_SPECIAL_TOKEN = re.compile(SPECIAL_TOKEN_PATTERN)


def _utf8_sequences(lo: int, hi: int) -> list[list[tuple[int, int]]]:
    """The byte ranges whose concatenations are exactly the UTF-8 encodings of ``lo``..``hi``
    (the classic construction of RE2 and Rust's ``utf8-ranges``): a range is split where the
    encoded length changes and where its continuation bytes do not cover their whole span."""
    for limit in (0x7F, 0x7FF, 0xFFFF):  # one encoded length per range
        if lo <= limit < hi:
            return _utf8_sequences(lo, limit) + _utf8_sequences(limit + 1, hi)
    for shift in (6, 12, 18):  # continuation bytes below the first differing one: all or split
        mask = (1 << shift) - 1
        if lo >> shift != hi >> shift:
            if lo & mask:
                return _utf8_sequences(lo, lo | mask) + _utf8_sequences((lo | mask) + 1, hi)
            if hi & mask != mask:
                return _utf8_sequences(lo, (hi & ~mask) - 1) + _utf8_sequences(hi & ~mask, hi)
    first, last = chr(lo).encode(), chr(hi).encode()
    return [list(zip(first, last, strict=True))]


def utf8_alternatives(ranges: tuple[tuple[int, int], ...]) -> bytes:
    """A byte-level regex alternation matching the UTF-8 encoding of every code point in ``ranges``.

    For a regex over bytes (Arrow's binary arrays): each range becomes one or more sequences
    of byte classes.

    Example:
        >>> utf8_alternatives(((0x200B, 0x200B), (0xE0000, 0xE0FFF)))
        b'\\\\xe2\\\\x80[\\\\x8b-\\\\x8b]|\\\\xf3\\\\xa0[\\\\x80-\\\\xbf][\\\\x80-\\\\xbf]'
    """
    parts = []
    for lo, hi in ranges:
        for sequence in _utf8_sequences(lo, hi):
            *lead, (a, b) = sequence
            prefix = "".join(
                f"\\x{x:02x}" if x == y else f"[\\x{x:02x}-\\x{y:02x}]" for x, y in lead
            )
            parts.append(f"{prefix}[\\x{a:02x}-\\x{b:02x}]")
    return "|".join(parts).encode()


@functools.cache
def _invisible() -> re.Pattern[str]:
    return re.compile(invisible_pattern())


def remove_invisible(text: str) -> str:
    """``text`` without the characters of :func:`invisible_ranges`."""
    return _invisible().sub("", text)


def find_invisible(text: str) -> list[str]:
    """The invisible characters of ``text`` (:func:`invisible_ranges`) as ``U+XXXX``, in order,
    each once."""
    return list(dict.fromkeys(f"U+{ord(ch):04X}" for ch in _invisible().findall(text)))


def tag_text(text: str) -> str:
    """The ASCII that the tag characters of ``text`` spell (empty when there are none).

    Example:
        >>> tag_text("A cat.\\U000e0069\\U000e0067\\U000e006e\\U000e006f\\U000e0072\\U000e0065")
        'ignore'
    """
    lo, hi = TAG_CHARACTERS
    return "".join(chr(ord(ch) - lo) for ch in text if lo + 0x20 <= ord(ch) < hi)


def find_special_token(text: str) -> re.Match[str] | None:
    """The first chat special token in ``text``, or None."""
    return _SPECIAL_TOKEN.search(text)
