"""Cleaning and validation of LLM answers before they become views.

An answer is cut at its first chat special token, split into lines, tidied (labels,
introductions, list numbering, emphasis, quotes, the input echoed) and checked; a rejected one
gets a reason of :data:`REASONS` (docs/prompts-and-patterns.md).

Example:
    >>> from cseaug.config import CleaningConfig
    >>> clean_answer('**Hypothesis:** "A dog is outside."', view="positive",
    ...              source_sentence="A black and white dog is running through a snowy field.",
    ...              cfg=CleaningConfig())
    Cleaned(text='A dog is outside.', reason=None)
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from cseaug.config import CleaningConfig
from cseaug.llm.base import Message
from cseaug.text_hazards import find_special_token, remove_invisible, split_lines

EMPTY = "empty"
REFUSAL = "refusal"
IDENTICAL = "identical_to_input"
TOO_SHORT = "too_short"
TOO_LONG = "too_long"
LLM_ERROR = "llm_error"
SPECIAL_TOKEN = "special_token"
PROMPT_ECHO = "prompt_echo"
LABEL_ONLY = "label_only"
SEVERAL_ANSWERS = "several_answers"
TALKS_ABOUT_INPUT = "talks_about_input"
REPETITION = "repetition"
REASONS: tuple[str, ...] = (
    EMPTY,
    SPECIAL_TOKEN,
    REFUSAL,
    LABEL_ONLY,
    PROMPT_ECHO,
    SEVERAL_ANSWERS,
    TALKS_ABOUT_INPUT,
    REPETITION,
    IDENTICAL,
    TOO_SHORT,
    TOO_LONG,
    LLM_ERROR,
)

ECHO_NGRAM = 5  # word n-grams compared for prompt_echo

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

# "Hypothesis:", "Sentence 2:", "Revised sentence:", "The new sentence is:", "Positive (score 5):"
_LABEL = re.compile(
    r"^(?:(?:the|a|an|my|your)\s+)?(?:(?:generated|new|revised|rewritten|output|final|positive|"
    r"negative|intermediate|contradict(?:ing|ory)|entail(?:ed|ment)|similar|paraphrased?|modified|"
    r"improved|alternative|updated|corrected|suggested)\s+)?"
    r"(?:hypothesis|sentence(?:\s*\d+)?|answer|output|response|result|paraphrase|version|rewrite|"
    r"positive|negative|intermediate|contradiction|entailment|knowledge|ski)"
    r"(?:\s+(?:is|would be|could be|reads))?\s*(?:\(.{0,40}?\))?\s*:\s*",
    re.IGNORECASE,
)
# Labels of the input rather than the answer: "Premise: ...", "Sentence 1: ...",
# "The original sentence is:" (then the input on the next line).
_ECHO = re.compile(
    r"^(?:the\s+)?(?:premise|sentence\s*1|input(?:\s+sentence)?|original(?:\s+sentence)?"
    r"|given\s+sentence|user['’]s\s+(?:input\s+)?sentence)(?:\s+(?:is|was|reads))?\s*:",
    re.IGNORECASE,
)
# Chatty openings: "Sure, I'd be happy to help!", "Here is the revised sentence:", "Example 4:".
_PREAMBLE = re.compile(
    r"^(?:(?:sure(?!\s+enough)|certainly|of course|okay|ok)\b[^.!?:\n]*[.!?:]\s*"
    r"|here(?:\s+is|\s+are|['’]s)\b[^:\n]*:\s*"
    r"|example\s*\d*\s*:\s*$)",
    re.IGNORECASE,
)
# A sentence view that comments on its input instead of rewriting it: "The sentence is
# grammatically incorrect ...", "Identify the premise: The premise is ...", "This is a
# classic example of a syllogism ...".
_TALK = re.compile(
    r"^(?:[^:]{0,40}:\s*)?(?:the|this)\s+(?:original\s+|given\s+|input\s+)?"
    r"(?:sentence|premise|hypothesis)"
    r"\s+(?:is|does|has)\b|^this\s+is\s+an?\s+(?:\w+\s+){0,2}example\b",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^(?:[-*•]\s+|\d+\s*[.)]\s+|\(\d+\)\s+)")
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
_FENCE = re.compile(r"^`{3}.*$")
# An answer that talks about the prompt itself ("SYSTEM PROMPT: ...", "my instructions are").
_PROMPT_TALK = re.compile(
    r"\b(?:system\s+(?:prompt|message|instructions?)|my\s+(?:instructions|system\s+prompt|prompt)"
    r"|(?:the\s+)?instructions\s+(?:i\s+was|i['’]ve\s+been|i\s+have\s+been)\s+given)\b",
    re.IGNORECASE,
)
# The label of a prompt line: "- Example 2:", "  - Premise:", "Sentence 1:".
_PROMPT_LABEL = re.compile(r"^[-*•\s]*(?:[A-Za-z]+\s*){1,3}\d*\s*:\s*")
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "„": "“", "「": "」", "`": "`"}
_QUOTED = re.compile(r"^(.)(.*?)(.)([.!?]?)$", re.DOTALL)  # a quote, the text, its closing, a stop
_APOSTROPHE = re.compile(r"(?<=\w)['’](?=\w)")  # "man's": not a quote
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“(\[]?[A-Z0-9])")


@dataclass(frozen=True)
class Cleaned:
    """A cleaned answer (``text``) or why it was rejected (``reason``)."""

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
    return " ".join(text.casefold().translate(_PUNCTUATION_TO_SPACE).split())


class _PunctuationToSpace(dict):
    """A ``str.translate`` table that maps each punctuation character (Unicode category P*)
    to a space and every other character to itself, filled as characters are first seen (in
    the Basic Multilingual Plane only: at most 65,536 entries, whatever the answers hold)."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        mapped = " " if unicodedata.category(char).startswith("P") else char
        if code < 0x10000:
            self[code] = mapped
        return mapped


_PUNCTUATION_TO_SPACE = _PunctuationToSpace()


def _unquote(text: str) -> str:
    """``text`` without the quotes around all of it ('"A dog runs".' gives 'A dog runs.')."""
    while (match := _QUOTED.match(text)) and _QUOTES.get(match[1]) == match[3]:
        inner, stop = match[2].strip(), match[4]
        # '"a" and "b"' is not one quoted string
        if match[1] in _APOSTROPHE.sub("", inner) or match[3] in _APOSTROPHE.sub("", inner):
            break
        text = inner + stop if stop and not inner.endswith((".", "!", "?")) else inner
    return text


def _tidy_line(line: str) -> str:
    line = _EMPHASIS.sub(r"\2", line)
    for _ in range(3):  # "1. **Hypothesis:** ..." takes a few passes
        before = line
        line = _BULLET.sub("", line).strip()
        line = _PREAMBLE.sub("", line).strip()
        line = _LABEL.sub("", line).strip()
        line = _unquote(line)
        if line == before:
            break
    return line


@dataclass
class _Lines:
    """An answer's lines: its content, the input echoed behind a label, chatty openings, and
    counts of list items and bare labels."""

    content: list[str]
    echoed: list[str]
    chatter: list[str]
    items: int = 0
    labels: int = 0


def _read_lines(raw: str, colon_ends_labels: bool) -> _Lines:
    """Sort the lines of ``raw`` (with ``colon_ends_labels``, a line ending with a colon is a
    label)."""
    out, echo_next = _Lines([], [], []), False
    for line in split_lines(raw):
        if not line or _FENCE.match(line):
            continue
        unbulleted = _BULLET.sub("", _EMPHASIS.sub(r"\2", line)).strip()
        echo = _ECHO.match(unbulleted)
        tidy = _tidy_line(unbulleted[echo.end() :] if echo else line)
        if not tidy and ":" not in line:  # "Sure, I'd be happy to help!"; "Of course not."
            out.chatter += [_unquote(unbulleted)] if _unquote(unbulleted) else []
        elif not tidy or (colon_ends_labels and tidy.endswith(":")):
            out.labels += 1  # "The original sentence is:", "Revised sentence:"
            echo_next = echo is not None
        elif echo or echo_next:
            out.echoed.append(tidy)
            echo_next = False
        else:
            out.content.append(tidy)
            out.items += _BULLET.match(line) is not None
    return out


def _repeats(text: str) -> bool:
    """Whether ``text`` loops: a sentence repeats an earlier one (or its first five words or
    more), or fewer than 30 % of eight words or more differ ("1.1.1.1.1.1.1.1")."""
    words = normalize_for_comparison(text).split()
    if len(words) >= 8 and len(set(words)) < 0.3 * len(words):
        return True
    seen: list[list[str]] = []
    for sentence in _SENTENCE_END.split(text):
        these = normalize_for_comparison(sentence).split()
        if these and any(
            these == s or (len(these) >= 5 and s[: len(these)] == these) for s in seen
        ):
            return True
        seen.append(these)
    return False


def _ngrams(words: Sequence[str]) -> list[tuple[str, ...]]:
    return [tuple(words[i : i + ECHO_NGRAM]) for i in range(len(words) - ECHO_NGRAM + 1)]


@functools.lru_cache(maxsize=64)
def _prompt_profile(prompt_text: str) -> tuple[frozenset[tuple[str, ...]], frozenset[str]]:
    """The prompt's word n-grams and normalised lines (cached: one per template)."""
    lines = prompt_text.splitlines()
    variants = [*lines, *(_PROMPT_LABEL.sub("", line) for line in lines)]
    normal = frozenset(filter(None, map(normalize_for_comparison, variants)))
    words = normalize_for_comparison(prompt_text).split()
    return frozenset(_ngrams(words)), normal


def echoes_prompt(
    text: str, source_sentence: str, prompt: Sequence[Message], max_overlap: float
) -> bool:
    """Whether the cleaned answer ``text`` repeats its prompt's instructions or examples
    (``prompt_echo``): ``max_overlap`` of its word 5-grams are in the prompt and not in the
    input ``source_sentence``.

    Example:
        >>> prompt = ({"role": "system", "content": "Your task is to generate a new sentence "
        ...            "that is semantically similar to the user's input sentence."},
        ...           {"role": "user", "content": "A cat sleeps."})
        >>> echoes_prompt("Your task is to generate a new sentence.", "A cat sleeps.", prompt, 0.5)
        True
        >>> echoes_prompt("A cat is sleeping.", "A cat sleeps.", prompt, 0.5)
        False
    """
    if _PROMPT_TALK.search(text) and not _PROMPT_TALK.search(source_sentence):
        return True
    # The input is the one part of the prompt an answer may repeat.
    prompt_text = "\n".join(m["content"] for m in prompt)
    if source_sentence:
        prompt_text = prompt_text.replace(source_sentence, "\n")
    prompt_ngrams, prompt_lines = _prompt_profile(prompt_text)
    words = normalize_for_comparison(text).split()
    if len(words) < ECHO_NGRAM:
        return " ".join(words) in prompt_lines
    grams = _ngrams(words)
    from_input = set(_ngrams(normalize_for_comparison(source_sentence).split()))
    echoed = sum(1 for g in grams if g in prompt_ngrams and g not in from_input)
    return echoed / len(grams) >= max_overlap


def _is_refusal(raw: str, source_sentence: str, patterns: list[str]) -> bool:
    """Whether a pattern matches ``raw`` and not the input ("I cannot swim." contradicts
    "I can swim.")."""
    for pattern in patterns:
        regex = re.compile(pattern, re.IGNORECASE | re.MULTILINE)
        if regex.search(raw) and not regex.search(source_sentence):
            return True
    return False


def clean_answer(
    raw: str | None,
    *,
    view: str,
    source_sentence: str,
    cfg: CleaningConfig,
    prompt: Sequence[Message] = (),
) -> Cleaned:
    """Tidy one answer for ``view`` and validate it against ``source_sentence`` (its prompt's
    input) and ``prompt`` (its messages, for ``prompt_echo``; none: no check).

    Example:
        >>> from cseaug.config import CleaningConfig
        >>> clean_answer("I'm sorry, but I can't do that.", view="negative",
        ...              source_sentence="A man plays a guitar.", cfg=CleaningConfig()).reason
        'refusal'
    """
    if raw is None or not remove_invisible(raw).strip():
        return Cleaned(None, EMPTY)
    token = find_special_token(raw)
    raw = raw[: token.start()] if token else raw  # cut at the first chat special token
    if not remove_invisible(raw).strip():  # nothing visible precedes the token
        return Cleaned(None, SPECIAL_TOKEN)
    read = _read_lines(raw, colon_ends_labels=not source_sentence.rstrip().endswith(":"))
    # an answer that is only an opening such as "Of course there were no weapons." is a sentence
    lines = read.content or read.chatter
    # tidied lines too: "1. **I'm sorry, but ...**" refuses as much as the bare text
    checked = "\n".join([raw, *lines])
    if _is_refusal(checked, source_sentence, [*REFUSAL_PATTERNS, *cfg.extra_refusal_patterns]):
        return Cleaned(None, REFUSAL)
    if not read.content and read.echoed:  # only the input, behind its label: no answer came
        same = normalize_for_comparison(read.echoed[0]) == normalize_for_comparison(source_sentence)
        return Cleaned(None, IDENTICAL if same else LABEL_ONLY)
    if not lines:
        return Cleaned(None, LABEL_ONLY if read.labels else EMPTY)
    if view == KNOWLEDGE_VIEW:
        sentences = _SENTENCE_END.split(" ".join(lines))
        text = " ".join(sentences[: cfg.knowledge_max_sentences])
    else:
        text = lines[0]
    threshold = cfg.prompt_echo_max_overlap
    if prompt and threshold is not None and echoes_prompt(text, source_sentence, prompt, threshold):
        return Cleaned(None, PROMPT_ECHO)
    if view != KNOWLEDGE_VIEW and read.items > 1:  # candidates: which one was asked for?
        return Cleaned(None, SEVERAL_ANSWERS)
    if view != KNOWLEDGE_VIEW and _TALK.search(text) and not _TALK.search(source_sentence):
        return Cleaned(None, TALKS_ABOUT_INPUT)
    if _repeats(" ".join(lines) if view == KNOWLEDGE_VIEW else text):
        return Cleaned(None, REPETITION)
    if normalize_for_comparison(text) == normalize_for_comparison(source_sentence):
        return Cleaned(None, IDENTICAL)
    if view != KNOWLEDGE_VIEW:
        words, input_words = len(text.split()), max(1, len(source_sentence.split()))
        if words < cfg.min_length_ratio * input_words:
            return Cleaned(None, TOO_SHORT)
        if words > cfg.max_length_ratio * input_words:
            return Cleaned(None, TOO_LONG)
    return Cleaned(text)
