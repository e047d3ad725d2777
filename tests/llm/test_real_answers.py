"""Answer cleaning and the per-row checks on what a real chat model wrote, and on what people
wrote (docs/quality.md, "Real chat answers"; the figures: benchmarks/measure_answer_cleaning.py).

The model's answers (SmolLM2-135M-Instruct, greedy, the shipped NGCSE and SKI prompts:
tests/fixtures/smollm2_answers.json) are labels, the anchor behind a label, rambling, lists,
copied examples: whatever each becomes, no view kept has the shape of a chat answer. Human
sentences fed as answers are never rejected for their shape, but for the defects the data
really hold.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cseaug.llm.clean import REASONS, normalize_for_comparison
from cseaug.quality.checks import REASONS as ROW_REASONS
from cseaug.text_hazards import find_control, find_invisible
from tests.llm.real_answers import human_sentences, real_answers, verdict

QUOTES = "\"'“”‘’«»„「」"
LABEL = re.compile(
    r"^(?:the\s+)?(?:\w+\s+){0,2}(?:sentence|hypothesis|premise|answer|knowledge)\b[^:]{0,20}:",
    re.IGNORECASE,
)
PAIR_REASONS = {"llm/too_short", "llm/too_long", "llm/identical_to_input"}

EXPLAINED = {
    # STS12 train's own mojibake: a C0 control where a right quote was, and a soft hyphen
    "Treasury\x12s long-range plan": "quality/control_characters",
    "Brittany and MarÃ\xadn": "quality/invisible_characters",
    # a Europarl fragment ending with a colon, paired with a sentence that does not
    "on the basis of a simple idea:": "llm/label_only",
}
"""Every human sentence of ../shared/data rejected for its shape, and why (27,732 measured)."""


def test_no_kept_view_of_the_real_model_has_the_shape_of_a_chat_answer(shared_data: Path) -> None:
    answers = real_answers(shared_data)
    assert len(answers) >= 24 and {a.method for a in answers} == {"sts", "nli", "ski"}
    kept = 0
    for a in answers:
        text, reason = verdict(a.raw, a.anchor, a.method, a.view, a.prompt)
        if text is None:
            stage, code = reason.split("/")
            assert code in (REASONS if stage == "llm" else ROW_REASONS), reason
            continue
        kept += 1
        where = f"{a.method}/{a.view} of line {a.line}: {text!r}"
        assert "\n" not in text and not find_control(text) and not find_invisible(text), where
        assert not text.endswith(":") and not LABEL.match(text), where
        assert not (text[0] in QUOTES and text[-1] in QUOTES), where
        assert normalize_for_comparison(text) != normalize_for_comparison(a.anchor), where
    assert kept < len(answers) / 2  # a 135M model: most of its answers are not usable


def test_the_anchor_behind_a_label_or_quotes_is_identical_to_input(shared_data: Path) -> None:
    """Every recorded answer that is labels and the anchor, quoted or not (the model's most
    frequent shape after copying), is rejected as the copy it is."""
    for a in real_answers(shared_data):
        lines = [line for line in a.raw.splitlines() if line.strip()]
        content = [line for line in lines if not line.rstrip().endswith(":")]
        unlabelled = [line.split(":", 1)[-1].strip().strip(QUOTES) for line in content]
        if ":" in a.raw and unlabelled == [a.anchor]:
            assert verdict(a.raw, a.anchor, a.method, a.view, a.prompt)[1] in (
                "llm/identical_to_input",
                "llm/prompt_echo",
            ), a.raw
    for raw in ("The original sentence is: {}", 'Revised sentence: "{}"', "“{}”"):
        anchor = "She was the first female district commissioner in Ghana."
        assert verdict(raw.format(anchor), anchor, "sts", "negative") == (
            None,
            "llm/identical_to_input",
        )


def test_human_sentences_are_not_rejected_for_their_shape(shared_data: Path) -> None:
    """A tenth of the STS-B, STS12 and SNLI sentences (every 10th of 27,732 pairs), each as
    the answer to its pair partner: none is rejected for the shape of a chat answer; the
    whole set's few rejects are the data's own defects (:data:`EXPLAINED`)."""
    pairs = human_sentences(shared_data)
    assert len(pairs) > 27_000
    wrong = []
    for source, sentence in pairs[::10]:
        reason = verdict(sentence, source, "nli", "positive")[1]
        if reason and reason not in PAIR_REASONS:
            wrong.append((reason, sentence))
    assert not wrong
    for fragment, reason in EXPLAINED.items():
        source, sentence = next((s, x) for s, x in pairs if fragment in x)
        assert verdict(sentence, source, "nli", "positive")[1] == reason


@pytest.mark.parametrize(
    ("source", "sentence"),
    [
        ("There were weapons.", "Of course there were no weapons."),
        ("Sure, it was hit.", "Sure, it is possible his home was affected, but not the school."),
        ("Question No 5 by (H-0885/00):", "Question No 6 by (H-0886/00):"),
    ],
)
def test_human_openings_and_headers_stay_sentences(source: str, sentence: str) -> None:
    """An opening word ("Of course", "Sure") is no chatty preamble when nothing follows it; a
    line ending with a colon is no label when its input ends with one too."""
    assert verdict(sentence, source, "nli", "positive") == (sentence, "")
