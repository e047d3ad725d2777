"""Text that must not reach a prompt or a dataset: invisible characters and chat special tokens.

Two classes, defined once for corpus cleaning (:mod:`cseaug.corpus.cleaning`, Arrow/RE2)
and answer cleaning (:mod:`cseaug.llm.clean`, Python ``re``); both engines read the same
pattern strings.

**Invisible characters** (:data:`INVISIBLE_RANGES`) change what a reader sees without being
seen: zero-width spaces and joiners that hide a line's emptiness or split a word for a
filter, and bidirectional controls that display text in another order than it is stored
(the "Trojan Source" trick). Zero-width non-joiner and joiner (U+200C, U+200D) are not in
the class: Persian, the Indic scripts and emoji sequences need them inside words. They
join nothing at the start or end of a line, where cleaning trims them
(:data:`EDGE_JOINERS`).

**Chat special tokens** (:data:`SPECIAL_TOKEN_PATTERN`) are the control words of chat
templates written out as text: ``<|im_start|>``, ``<|im_end|>``, ``<|endoftext|>``,
``<|eot_id|>`` and every other ``<|name|>``, ``[INST]`` / ``[/INST]``, ``<<SYS>>``,
``<start_of_turn>`` / ``<end_of_turn>``, ``<s>`` / ``</s>`` and DeepSeek's full-width
``<｜name｜>``. In a corpus line they let the line end the user's turn and speak as the
system; in an answer they mark where the model's turn ended.

Example:
    >>> remove_invisible("Pay\\u200b\\u202epal")
    'Paypal'
    >>> find_special_token("A dog runs.<|im_end|>junk").group()
    '<|im_end|>'
"""

from __future__ import annotations

import re

INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x061C, 0x061C),  # ARABIC LETTER MARK (bidirectional)
    (0x200B, 0x200B),  # ZERO WIDTH SPACE
    (0x200E, 0x200F),  # LEFT-TO-RIGHT MARK, RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),  # bidirectional embeddings and overrides (LRE, RLE, PDF, LRO, RLO)
    (0x2060, 0x2064),  # WORD JOINER, invisible mathematical operators
    (0x2066, 0x2069),  # bidirectional isolates (LRI, RLI, FSI, PDI)
    (0xFEFF, 0xFEFF),  # ZERO WIDTH NO-BREAK SPACE (byte order mark)
)
"""Code point ranges (inclusive) removed from, or rejecting, a line."""

EDGE_JOINERS = "\u200c\u200d"
"""Zero-width non-joiner and joiner: kept inside a line, trimmed at its edges."""

INVISIBLE_PATTERN = "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in INVISIBLE_RANGES) + "]"
"""A character class of :data:`INVISIBLE_RANGES` (literal characters: valid in RE2 and ``re``)."""

SPECIAL_TOKEN_PATTERN = (
    r"<\|[A-Za-z0-9_.:-]{1,40}\|>"  # ChatML, GPT, Llama 3, Phi: <|im_end|>, <|eot_id|>
    r"|\[/?INST\]"  # Llama 2, Mistral
    r"|<</?SYS>>"  # Llama 2 system block
    r"|<(?:start|end)_of_turn>"  # Gemma
    r"|</?s>"  # sentence-piece begin / end of sequence written out
    r"|<｜[^｜<>]{1,40}｜>"  # DeepSeek (full-width bars)
)
"""Chat special tokens written as text (bounded repeats only: safe in ``re`` and RE2)."""

_INVISIBLE = re.compile(INVISIBLE_PATTERN)
_SPECIAL_TOKEN = re.compile(SPECIAL_TOKEN_PATTERN)


def utf8_alternatives(ranges: tuple[tuple[int, int], ...]) -> bytes:
    """A byte-level regex alternation matching the UTF-8 encoding of every code point in ``ranges``.

    For a regex over bytes (Arrow's binary arrays): each range becomes its shared lead
    bytes followed by a class of last bytes. Every range here shares its lead bytes.

    Example:
        >>> utf8_alternatives(((0x200B, 0x200B), (0x202A, 0x202E)))
        b'\\\\xe2\\\\x80[\\\\x8b-\\\\x8b]|\\\\xe2\\\\x80[\\\\xaa-\\\\xae]'
    """
    parts = []
    for lo, hi in ranges:
        first, last = chr(lo).encode(), chr(hi).encode()
        if first[:-1] != last[:-1]:
            raise ValueError(f"range U+{lo:04X}-U+{hi:04X} spans more than one lead sequence")
        lead = "".join(f"\\x{b:02x}" for b in first[:-1])
        parts.append(f"{lead}[\\x{first[-1]:02x}-\\x{last[-1]:02x}]")
    return "|".join(parts).encode()


def remove_invisible(text: str) -> str:
    """``text`` without the characters of :data:`INVISIBLE_RANGES`."""
    return _INVISIBLE.sub("", text)


def find_special_token(text: str) -> re.Match[str] | None:
    """The first chat special token in ``text``, or None."""
    return _SPECIAL_TOKEN.search(text)
