"""Text that must not reach a prompt or a dataset: invisible characters and chat special tokens.

Defined once for corpus cleaning (:mod:`cseaug.corpus.cleaning`, Arrow/RE2), answer cleaning
(:mod:`cseaug.llm.clean`) and the per-row checks (:mod:`cseaug.quality.checks`).
**Invisible characters** (:func:`invisible_pattern`) are Unicode's
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
def invisible_pattern() -> str:
    """A character class of every default-ignorable character but the joiners of
    :data:`EDGE_JOINERS`, in literal characters (valid in RE2 and ``re``): what cleaning
    removes from, or rejects, a line.

    Read from the ``regex`` module's tables of the Unicode version it ships, once per process
    (under 0.1 s): every code point is scanned, none is listed here.
    """
    code_points = array.array("I", range(0xD800))  # surrogates are not characters
    code_points.extend(range(0xE000, 0x110000))
    every = code_points.tobytes().decode("utf-32-le" if sys.byteorder == "little" else "utf-32-be")
    runs = regex.finditer(rf"[{DEFAULT_IGNORABLE}--[{EDGE_JOINERS}]]+", every, flags=regex.V1)
    return "[" + "".join(f"{run.group()[0]}-{run.group()[-1]}" for run in runs) + "]"


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


@functools.cache
def _invisible() -> re.Pattern[str]:
    return re.compile(invisible_pattern())


def remove_invisible(text: str) -> str:
    """``text`` without the characters of :func:`invisible_pattern`."""
    return _invisible().sub("", text)


def find_invisible(text: str) -> list[str]:
    """The invisible characters of ``text`` (:func:`invisible_pattern`) as ``U+XXXX``, in order,
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
