"""Prompt templates: the paper's text verbatim, chat layout, manifest records, errors."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from cseaug.config import PatternConfig
from cseaug.errors import ConfigError
from cseaug.patterns import load_examples
from cseaug.prompts import (
    METHOD_PROMPTS,
    default_prompts_dir,
    load_method_prompts,
    load_prompt,
    prompts_manifest,
)

NGCSE = "000_ce623b3f3f7df85f.txt"
SKICSE = "003_1b38aa4248704c5a.txt"

# (template, kind, first words, last words) of each prompt in NGCSE's appendix
APPENDIX = [
    (
        "nli_positive",
        "nli",
        "When the user enters a premise text, please generate a hypothesis text that stands",
        "the hypothesis must also be true.",
    ),
    (
        "nli_negative",
        "nli",
        "When the user enters a premise text, please generate a hypothesis text that presents",
        "cannot both be true at the same time.",
    ),
    (
        "sts_positive",
        "sts",
        "Your task is to generate a new sentence that is semantically similar",
        "same information as the original input sentence.",
    ),
    (
        "sts_intermediate",
        "sts",
        "Your task is to generate a revised sentence",
        "fewer details than the original input sentence.",
    ),
    (
        "sts_negative",
        "sts",
        "Your task is to generate a new sentence that conveys",
        "Generate the new sentence directly without any other interpretation.",
    ),
]


def _paper_prompt(text: str, first: str, last: str) -> str:
    start = text.index(first)
    end = text.index(last, start) + len(last)
    prompt = text[start:end]
    # the documented repairs of the PDF text (see the templates' headers)
    prompt = re.sub(r"\n+Figure 7:[^\n]*\n+", "\n", prompt)  # caption inside "pre-/mise"
    prompt = re.sub(r"(\w)-\n+(\w)", r"\1\2", prompt)  # "pre-mise", "run-ning"
    prompt = prompt.replace("Example 3: Sentence 2 is generated based on Sentence 1.", "Example 3:")
    return prompt.replace("\\$", "$")


def _normalise(text: str) -> str:
    """Layout-free text: list bullets and line breaks are layout, words and punctuation are not."""
    lines = [re.sub(r"^\s*-\s+", "", line) for line in text.splitlines()]
    return " ".join(" ".join(lines).split())


@pytest.mark.parametrize(("name", "kind", "first", "last"), APPENDIX)
def test_paper_examples_reproduce_the_appendix(
    shared_papers: Path, name: str, kind: str, first: str, last: str
) -> None:
    paper = (shared_papers / NGCSE).read_text(encoding="utf-8")
    examples = load_examples(PatternConfig(source="paper"), kind)
    view = name.split("_", 1)[1]
    messages = load_prompt(name).render(
        examples=examples.levels[view], sentence="An input sentence."
    )
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"] == "An input sentence."
    assert _normalise(messages[0]["content"]) == _normalise(_paper_prompt(paper, first, last))


def test_rendered_layout_is_exact() -> None:
    messages = load_prompt("nli_positive").render(
        examples=[("P1.", "H1."), ("P2.", "H2.")], sentence=" S. "
    )
    assert messages[0]["content"].split("\n\n")[2] == (
        "- Example 1:\n  - Premise: P1.\n  - Hypothesis: H1.\n- Example 2:\n  - Premise: P2.\n  - Hypothesis: H2."
    )
    assert messages[1] == {"role": "user", "content": "S."}


def test_ski_prompt_is_the_papers_template_then_the_sentence(shared_papers: Path) -> None:
    paper = (shared_papers / SKICSE).read_text(encoding="utf-8")
    quoted = re.search(r'We design the prompt template, "(.+?)", to obtain', paper).group(1)
    messages = load_prompt("ski").render(sentence="The Eiffel Tower is in Paris.")
    assert messages == ({"role": "user", "content": f"{quoted}\nThe Eiffel Tower is in Paris."},)


def test_manifest_records_name_and_sha256() -> None:
    prompts = load_method_prompts("sts")
    assert list(prompts) == ["positive", "intermediate", "negative"]
    records = prompts_manifest(prompts)
    assert [r["name"] for r in records] == list(METHOD_PROMPTS["sts"].values())
    for record in records:
        assert record["sha256"] == hashlib.sha256(Path(record["path"]).read_bytes()).hexdigest()
    assert default_prompts_dir() == Path(records[0]["path"]).parent


def test_custom_dir_and_errors(tmp_path: Path) -> None:
    (tmp_path / "plain.jinja2").write_text("Paraphrase: {{ sentence }}\n")
    assert load_prompt("plain", tmp_path).render(sentence="x") == (
        {"role": "user", "content": "Paraphrase: x"},
    )
    with pytest.raises(ConfigError, match=r"'absent' not found.*\['plain'\]"):
        load_prompt("absent", tmp_path)
    with pytest.raises(ConfigError, match="'sentence' is undefined"):
        load_prompt("plain", tmp_path).render(text="x")
    with pytest.raises(ConfigError, match="'examples' is undefined"):
        load_prompt("sts_negative").render(sentence="x")
    (tmp_path / "odd.jinja2").write_text("{% block prompt %}x{% endblock %}")
    with pytest.raises(ConfigError, match=r"\['prompt'\] are not chat roles"):
        load_prompt("odd", tmp_path)
    (tmp_path / "broken.jinja2").write_text("{% for x in %}")
    with pytest.raises(ConfigError, match=r"broken\.jinja2, line 1"):
        load_prompt("broken", tmp_path)
    with pytest.raises(ConfigError, match="no prompts"):
        load_method_prompts("osscse")
