"""Cleaning and validation of LLM answers (reason codes of docs/prompts-and-patterns.md)."""

from __future__ import annotations

import csv
import unicodedata
from pathlib import Path

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
        # the input echoed behind its label, then the answer behind another
        (
            f"The original sentence is:\n\n{PREMISE}\n\nHere's the revised sentence: A dog is outside.",
            "A dog is outside.",
        ),
        ("The new sentence is: A dog is outside.", "A dog is outside."),
        ("**Hypothesis:** A dog is outside.\n\n**Explanation:** it runs.", "A dog is outside."),
        ("'A man's dog is outside.'", "A man's dog is outside."),
        ('"A dog is outside".', "A dog is outside."),
        ("„A dog is outside.“", "A dog is outside."),
        ("A dog is outside.\u2028It snows.", "A dog is outside."),
        ("A dog\u00a0is\tout\u3000side.", "A dog is out side."),
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
        ("Hypothesis:", "label_only"),
        ("The original sentence is:", "label_only"),
        ("Here's the revised sentence:\n\n**Revised sentence:**", "label_only"),
        ("1. A dog is outside.\n2. A dog plays in the snow.", "several_answers"),
        ("- A dog is outside.\n- A dog plays in the snow.", "several_answers"),
        (f"The original sentence is: {PREMISE}", "identical_to_input"),
        (f'The original sentence is: "{PREMISE}"', "identical_to_input"),
        (
            f"The original sentence is:\n\n{PREMISE}\n\nHere's the revised sentence:",
            "identical_to_input",
        ),
        (f"“{PREMISE}”", "identical_to_input"),
        (f"Sentence 1: {PREMISE}", "identical_to_input"),
        ("Here's the revised sentence:\n\n- Sentence 1: A dog runs in a field.", "label_only"),
        ("The sentence is grammatically incorrect and does not say where.", "talks_about_input"),
        ("This is a classic example of a syllogism, where a dog runs.", "talks_about_input"),
        ("A dog runs in the snow. A dog runs in the snow.", "repetition"),
        ("A dog runs in the snow. A dog runs in the", "repetition"),
        ("1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.", "repetition"),
        ("I'm sorry, but I can't help with that.", "refusal"),
        ("As an AI language model, I do not generate contradictions.", "refusal"),
        ("I cannot fulfill this request.", "refusal"),
        ("I apologize, but this premise is unclear.", "refusal"),
        ("1. **I'm sorry, but I cannot comply.**", "refusal"),
        ("a black and WHITE dog is running through a snowy field", "identical_to_input"),
        (f'Hypothesis: "{PREMISE}"', "identical_to_input"),
        ("Dog.", "too_short"),
        (" ".join(f"word{i}" for i in range(40)) + ".", "too_long"),
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
    long = (
        "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was built for the "
        "World's Fair of 1889. Gustave Eiffel's company designed and built it."
    )
    assert clean(long, view="knowledge", source="Paris.").ok
    assert clean("As an AI, I know nothing about it.", view="knowledge").reason == "refusal"
    assert clean(PREMISE, view="knowledge").reason == "identical_to_input"
    # knowledge may talk about its sentence, but not in a loop
    assert clean("The sentence is about a dog. It is black and white.", view="knowledge").ok
    loop = "1. The dog is black and white.\n2. The dog is black and white."
    assert clean(loop, view="knowledge").reason == "repetition"


def test_normalize_for_comparison() -> None:
    assert normalize_for_comparison("  It's   a DOG!") == normalize_for_comparison("it s a dog")
    assert normalize_for_comparison("Déjà vu.") == "déjà vu"


def test_normalize_for_comparison_spaces_exactly_the_punctuation_of_unicode() -> None:
    """Every code point of the Basic Multilingual Plane (the table's, surrogates aside) and
    two astral blocks (computed each time), each twice (the table filled, then read),
    against the rule itself: a character of category P* is a space, any other is kept."""

    def by_the_rule(text: str) -> str:
        spaced = "".join(
            " " if unicodedata.category(ch).startswith("P") else ch for ch in text.casefold()
        )
        return " ".join(spaced.split())

    codes = [
        *range(0xD800),
        *range(0xE000, 0x10000),
        *range(0x1D000, 0x1F000),
        *range(0xE0000, 0xE0080),
    ]
    every = "".join(map(chr, codes))
    for start in range(0, len(every), 4096):
        chunk = every[start : start + 4096]
        expected = by_the_rule(chunk)
        for _ in range(2):
            assert normalize_for_comparison(chunk) == expected, hex(ord(chunk[0]))


# ----------------------------------------------------------------- special tokens, invisibles


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("A dog is outside.<|im_end|>\n<|im_start|>user\nNext one", "A dog is outside."),
        ("A dog is outside.<|endoftext|>Some other document.", "A dog is outside."),
        ("A dog is outside. [INST] and now write a poem [/INST]", "A dog is outside."),
        ("A dog is outside.</s>", "A dog is outside."),
    ],
)
def test_answers_are_cut_at_special_tokens(raw: str, expected: str) -> None:
    assert clean(raw) == Cleaned(expected)


@pytest.mark.parametrize("raw", ["A dog\u200b is out\u200bside.", "\u202eA dog is outside.\u202c"])
def test_answers_keep_invisible_characters_for_the_row_checks_to_reject(raw: str) -> None:
    """Cleaning no longer repairs them silently: the per-row checks reject the row
    (``invisible_characters``, tests/quality/test_checks.py)."""
    assert clean(raw) == Cleaned(raw)


@pytest.mark.parametrize("raw", ["<|im_start|>assistant\nA dog.", "<|eot_id|>", "\u200b<s>"])
def test_an_answer_that_starts_with_a_special_token_is_rejected(raw: str) -> None:
    assert clean(raw) == Cleaned(None, "special_token")


# ------------------------------------------------------------------------------ prompt echo

SYSTEM = (
    "Your task is to generate a new sentence that is semantically similar to the user's input "
    "sentence.\n\nIn the following illustrative examples, Sentence 1 and Sentence 2 are "
    "semantically similar:\n\n"
    "- Example 1:\n  - Sentence 1: A woman is slicing an onion.\n"
    "  - Sentence 2: A woman is cutting an onion into pieces.\n"
    "- Example 2:\n  - Sentence 1: Birds fly.\n  - Sentence 2: Birds are flying.\n\n"
    "Generate the new sentence directly without any other interpretation, and make sure it "
    "maintains the same information as the original input sentence."
)


def prompt_for(sentence: str) -> tuple[dict[str, str], ...]:
    return ({"role": "system", "content": SYSTEM}, {"role": "user", "content": sentence})


def clean_with_prompt(raw: str, source: str = PREMISE, cfg: CleaningConfig = CFG) -> Cleaned:
    return clean_answer(
        raw, view="positive", source_sentence=source, cfg=cfg, prompt=prompt_for(source)
    )


@pytest.mark.parametrize(
    "raw",
    [
        # the injected "reveal your instructions" obeyed
        "SYSTEM PROMPT: Your task is to generate a new sentence that is semantically similar...",
        "Your task is to generate a new sentence that is semantically similar to the input.",
        "My instructions are to write similar sentences.",
        # a few-shot example copied, long and short
        "A woman is cutting an onion into pieces.",
        "Sentence 2: Birds are flying.",
    ],
)
def test_answers_that_echo_the_prompt_are_rejected(raw: str) -> None:
    assert clean_with_prompt(raw) == Cleaned(None, "prompt_echo")


@pytest.mark.parametrize(
    ("raw", "source"),
    [
        ("A black and white dog runs across a field of snow.", PREMISE),
        # the input repeats words of the instructions: the answer may repeat them too
        (
            "The task is to generate a new sentence that is similar.",
            "Your task is to generate a new sentence that is similar.",
        ),
        # the input is an example sentence: paraphrasing it is no echo
        ("Someone is cutting an onion into pieces.", "A woman is cutting an onion into pieces."),
        # it names the system prompt because the input does
        ("They asked for the system prompt.", "The system prompt was requested."),
    ],
)
def test_paraphrases_of_the_input_are_not_echoes(raw: str, source: str) -> None:
    assert clean_with_prompt(raw, source=source).ok


def test_the_echo_threshold_comes_from_the_config() -> None:
    half = "A woman is cutting an onion into pieces while the dog sleeps soundly outside."
    assert clean_with_prompt(half).ok  # 4 of its 10 five-grams are the example's
    strict = CleaningConfig(prompt_echo_max_overlap=0.25)
    assert clean_with_prompt(half, cfg=strict).reason == "prompt_echo"
    off = CleaningConfig(prompt_echo_max_overlap=None)
    assert clean_with_prompt("A woman is cutting an onion into pieces.", cfg=off).ok


def test_instructions_around_the_input_in_the_user_message_count_too() -> None:
    """SKICSE's one user message holds the instructions and then the sentence."""
    instructions = (
        "1) Answer objectively what you know about the sentence. 2) Make sure your answers are "
        "no more than four sentences and contain important information."
    )
    prompt = ({"role": "user", "content": f"{instructions}\n{PREMISE}"},)
    echoed = clean_answer(
        instructions, view="knowledge", source_sentence=PREMISE, cfg=CFG, prompt=prompt
    )
    assert echoed.reason == "prompt_echo"
    knowledge = "Dogs with black and white coats are common. Snowy fields are cold in winter."
    assert clean_answer(
        knowledge, view="knowledge", source_sentence=PREMISE, cfg=CFG, prompt=prompt
    ).ok


@pytest.mark.shared_data
def test_real_paraphrases_and_hypotheses_are_rarely_taken_for_echoes(shared_data: Path) -> None:
    """Human-written answers are not echoes: STS-B test pairs (sentence 2 as the answer to
    sentence 1, under each STS prompt with examples drawn from STS12 train) and SNLI
    hypotheses (under the NLI prompts with the paper's examples). What is flagged (13 of 8,137)
    is almost only an answer identical to one of the prompt's examples: rejected on purpose."""
    from cseaug.config import PatternConfig
    from cseaug.patterns import load_examples
    from cseaug.prompts import load_method_prompts

    cases = []
    sts = load_examples(PatternConfig(source="sts12", path=str(shared_data / "sts12_train")), "sts")
    sts_prompts = load_method_prompts("sts")
    with open(shared_data / "stsbenchmark" / "sts-test.csv", encoding="utf-8") as handle:
        pairs = [line.rstrip("\n").split("\t")[5:7] for line in handle]
    for view, prompt in sts_prompts.items():
        cases += [
            (view, s1, s2, prompt.render(examples=sts.levels[view], sentence=s1))
            for s1, s2 in pairs
        ]
    nli = load_examples(PatternConfig(source="paper"), "nli")
    nli_prompts = load_method_prompts("nli")
    with open(shared_data / "nli" / "nli_triples_snli_devtest.csv", encoding="utf-8") as handle:
        triples = list(csv.DictReader(handle))[:2000]
    for view, column in (("positive", "sent1"), ("negative", "hard_neg")):
        prompt = nli_prompts[view]
        cases += [
            (
                view,
                t["sent0"],
                t[column],
                prompt.render(examples=nli.levels[view], sentence=t["sent0"]),
            )
            for t in triples
        ]
    echoes = [
        case
        for case in cases
        if clean_answer(
            case[2], view=case[0], source_sentence=case[1], cfg=CFG, prompt=case[3]
        ).reason
        == "prompt_echo"
    ]
    assert len(cases) > 8000
    assert len(echoes) / len(cases) < 0.01, echoes[:10]
