"""The ``patterns`` section: NGCSE's pattern source and its fixed in-context examples
(docs/prompts-and-patterns.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cseaug.config.base import StrictModel

SOURCE_KIND: dict[str, Literal["sts", "nli"]] = {
    "sts12": "sts",
    "sts_table": "sts",
    "nli_csv": "nli",
    "snli_senteval": "nli",
}
"""The pattern kind each source's examples have (``paper`` has both)."""


class PatternConfig(StrictModel):
    """The pattern source and the fixed in-context examples (NGCSE, 'Pattern Simulation with LLM')."""

    source: Literal["sts12", "sts_table", "nli_csv", "snli_senteval", "paper"] = Field(
        description="'sts12': SemEval STS.input/STS.gs files of a directory; 'sts_table': any "
        "(s1, s2, score) table incl. STS-B; 'nli_csv': sent0,sent1,hard_neg; 'snli_senteval': "
        "SentEval s1/s2/labels files; 'paper': the examples printed in NGCSE's appendix."
    )
    path: str | None = Field(None, description="File or directory of the pattern source.")
    columns: list[str] | None = Field(
        None,
        description="For 'sts_table': names of the (s1, s2, score) columns, if not auto-detected.",
    )
    k: int = Field(3, ge=1, le=20, description="Examples per level (the paper uses 3).")
    seed: int = Field(0, description="Seed of the draw of examples, made once per run.")
    positive_min_score: float = Field(
        4.0, description="STS positive examples: score strictly above."
    )
    negative_max_score: float = Field(
        1.0, description="STS negative examples: score strictly below."
    )
    intermediate_range: tuple[float, float] = Field(
        (1.0, 4.0), description="STS intermediate examples: score within this closed range."
    )
    intermediate_order: Literal["file", "longer-first"] = Field(
        "file",
        description="STS intermediate examples drawn from a source: 'file' keeps each pair's "
        "order in the file; 'longer-first' makes the pair's longer sentence (in words) "
        "Sentence 1, as the prompt describes them ('Sentence 2 is created by omitting details "
        "from Sentence 1'); docs/prompts-and-patterns.md.",
    )
