"""Cleaning and validation of LLM answers (reason codes of docs/prompts-and-patterns.md)."""

from __future__ import annotations

import pytest

from cseaug.config import CleaningConfig
from cseaug.llm.clean import REASONS, Cleaned, clean_answer, normalize_for_comparison

PREMISE = "A black and white dog is running through a snowy field."
CFG = CleaningConfig()


def clean(
    raw: str | None, view: str = "positive", source: str = PREMISE, cfg: CleaningConfig = CFG
) -> Cleaned:
    return clean_answer(raw, view=view, source_sentence=source, cfg=cfg)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("A dog is outside.", "A dog is outside."),
        ('**Hypothesis:** "A dog is outside."', "A dog is outside."),
        ("Hypothesis: A dog is outside.", "A dog is outside."),
        ("Sentence 2: A dog is outside.", "A dog is outside."),
        ("Revised sentence: A dog is outside.", "A dog is outside."),
        ("Positive: A dog is outside.", "A dog is outside."),
        ("1. A dog is outside.", "A dog is outside."),
        ("- **A dog is outside.**", "A dog is outside."),
        ("“A dog is outside.”", "A dog is outside."),
        ("'A dog is outside.'", "A dog is outside."),
        ("Sure! Here is the hypothesis: A dog is outside.", "A dog is outside."),
        ("Sure, I'd be happy to help!\n\nHypothesis: A dog is outside.", "A dog is outside."),
        (f"Premise: {PREMISE}\nHypothesis: A dog is outside.", "A dog is outside."),
        ("Example 4:\n  - Sentence 1: x\n  - Sentence 2: A dog is outside.", "A dog is outside."),
        (
            "A dog is outside.\n\nExplanation: the premise says it runs in a field.",
            "A dog is outside.",
        ),
        ("```\nA dog is outside.\n```", "A dog is outside."),
        ('"Snow" and "dogs" are both outside.', '"Snow" and "dogs" are both outside.'),
    ],
)
def test_sentence_views_are_tidied(raw: str, expected: str) -> None:
    assert clean(raw) == Cleaned(expected)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (None, "empty"),
        ("  \n\n ", "empty"),
        ('""', "empty"),
        ("Hypothesis:", "empty"),
        ("I'm sorry, but I can't help with that.", "refusal"),
        ("As an AI language model, I do not generate contradictions.", "refusal"),
        ("I cannot fulfill this request.", "refusal"),
        ("I apologize, but this premise is unclear.", "refusal"),
        ("1. **I'm sorry, but I cannot comply.**", "refusal"),
        ("a black and WHITE dog is running through a snowy field", "identical_to_input"),
        (f'Hypothesis: "{PREMISE}"', "identical_to_input"),
        ("Dog.", "too_short"),
        (" ".join(["word"] * 40) + ".", "too_long"),
    ],
)
def test_rejections(raw: str | None, reason: str) -> None:
    result = clean(raw, view="negative")
    assert result == Cleaned(None, reason)
    assert result.reason in REASONS
    assert not result.ok


def test_refusal_words_that_the_input_also_has_are_content() -> None:
    assert clean("I cannot swim.", view="negative", source="I can swim, I cannot dive.").ok
    assert clean("I'm sorry, I forgot it.", view="negative", source="I'm sorry, I remember it.").ok
    assert (
        clean("I cannot help with that request.", view="negative", source="I can help.").reason
        == "refusal"
    )


def test_extra_refusal_patterns_and_ratios_come_from_the_config() -> None:
    cfg = CleaningConfig(
        extra_refusal_patterns=[r"^\s*N/A\b"], min_length_ratio=0.9, max_length_ratio=1.1
    )
    assert clean("N/A (no hypothesis)", cfg=cfg).reason == "refusal"
    assert clean("A dog is outside.", cfg=cfg).reason == "too_short"
    assert clean("A black and white dog is running through a very snowy field.", cfg=cfg).ok


def test_knowledge_keeps_up_to_n_sentences_on_one_line() -> None:
    raw = (
        "Sure! Here's what I know about the sentence:\n\n"
        "1) The sentence describes a dog. It is black and white.\n"
        "2) Snowy fields are cold. Dogs like snow. Many breeds exist."
    )
    assert clean(raw, view="knowledge") == Cleaned(
        "The sentence describes a dog. It is black and white. Snowy fields are cold. Dogs like snow."
    )
    two = CleaningConfig(knowledge_max_sentences=2)
    assert (
        clean(raw, view="knowledge", cfg=two).text
        == "The sentence describes a dog. It is black and white."
    )
    # knowledge may be much longer than its sentence: no length ratio applies
    long = " ".join(["The Eiffel Tower is a wrought-iron lattice tower in Paris."] * 3)
    assert clean(long, view="knowledge", source="Paris.").ok
    assert clean("As an AI, I know nothing about it.", view="knowledge").reason == "refusal"
    assert clean(PREMISE, view="knowledge").reason == "identical_to_input"


def test_normalize_for_comparison() -> None:
    assert normalize_for_comparison("  It's   a DOG!") == normalize_for_comparison("it s a dog")
    assert normalize_for_comparison("Déjà vu.") == "déjà vu"
