"""Text that must not reach a prompt or a dataset: control, invisible and separator characters,
and chat special tokens.

One definition, by Unicode property (never a list of code points), for corpus cleaning
(Arrow/RE2), answer cleaning and the per-row checks (``re``); docs/quality.md, "Text hazards",
says what each rule covers and what each side does with it.

Example:
    >>> remove_invisible("Pay\\u200b\\u202epal")
    'Paypal'
    >>> find_invisible("A\\u00adB\\U000e0041\\u2800")
    ['U+00AD', 'U+E0041', 'U+2800']
    >>> find_control("A\\x1b[31mB\\u2028")
    ['U+001B', 'U+2028']
    >>> find_special_token("A dog runs.<|im_end|>junk").group()
    '<|im_end|>'
"""

from __future__ import annotations

import array
import functools
import re
import sys

import regex

TAG_CHARACTERS = (0xE0000, 0xE007F)
"""The tag block (inclusive): default-ignorable, and each of U+E0020–U+E007E spells the
ASCII character 0xE0000 below it."""

EDGE_JOINERS = "\u200c\u200d"
"""Zero-width non-joiner and joiner: kept inside a line, trimmed at its edges."""

BLANK_GLYPHS = "\u2800"
"""Graphic characters whose glyph is empty by definition, which no property names: the
Braille blank (category So; the Hangul fillers are default-ignorable already)."""

CONTROL = r"[\p{Cc}\p{Zl}\p{Zp}]"
WHITESPACE = r"[\p{White_Space}--[ ]]"
LINE_BREAK = r"[\p{Line_Break=BK}\p{Line_Break=CR}\p{Line_Break=LF}\p{Line_Break=NL}]"
INVISIBLE = (
    r"[[\p{Default_Ignorable_Code_Point}\p{Cf}" + BLANK_GLYPHS + "]"
    r"--[\p{Prepended_Concatenation_Mark}" + EDGE_JOINERS + "]]"
)
"""The rules as ``regex`` module (V1) sets; :func:`char_class` spells them for RE2 and ``re``."""


@functools.cache
def char_class(expression: str) -> str:
    """The character class of every code point that the ``regex`` (V1) set ``expression``
    matches, as ranges (``\\xhh`` below U+0100, literal characters above: valid in RE2 and
    ``re``), read from the Unicode tables ``regex`` ships, once per process (under 0.1 s).

    Example:
        >>> char_class(r"\\p{Cc}")
        '[\\\\x00-\\\\x1f\\\\x7f-\\\\x9f]'
    """
    code_points = array.array("I", range(0xD800))  # surrogates are not characters
    code_points.extend(range(0xE000, 0x110000))
    every = code_points.tobytes().decode("utf-32-le" if sys.byteorder == "little" else "utf-32-be")

    def spell(ch: str) -> str:
        return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else ch

    runs = regex.finditer(f"{expression}+", every, flags=regex.V1)
    return "[" + "".join(f"{spell(r.group()[0])}-{spell(r.group()[-1])}" for r in runs) + "]"


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` (at :data:`LINE_BREAK`, not at U+001C-U+001E as ``str.splitlines``),
    each with its whitespace runs made one space, stripped.

    Example:
        >>> split_lines("A\\u00a0 dog.\\u2028B\\x1ec")
        ['A dog.', 'B\\x1ec']
    """
    space = _compiled(f"(?: |{char_class(WHITESPACE)})+")
    return [space.sub(" ", line).strip() for line in _compiled(char_class(LINE_BREAK)).split(text)]


def invisible_pattern() -> str:
    """The invisible characters (:data:`INVISIBLE`) as a character class: what cleaning
    removes from, or rejects, a line."""
    return char_class(INVISIBLE)


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


_compiled = functools.cache(re.compile)


def _code_points(pattern: str, text: str) -> list[str]:
    return list(dict.fromkeys(f"U+{ord(ch):04X}" for ch in _compiled(pattern).findall(text)))


def remove_invisible(text: str) -> str:
    """``text`` without the characters of :func:`invisible_pattern`."""
    return _compiled(invisible_pattern()).sub("", text)


def find_invisible(text: str) -> list[str]:
    """The invisible characters of ``text`` as ``U+XXXX``, in order, each once."""
    return _code_points(invisible_pattern(), text)


def find_control(text: str) -> list[str]:
    """The control and separator characters of ``text`` as ``U+XXXX``, in order, each once."""
    return _code_points(char_class(CONTROL), text)


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
