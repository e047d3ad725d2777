"""The ``generation`` and ``cleaning`` sections: how the LLM views are written, and which
answers are rejected."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cseaug.config.base import StrictModel


class GenerationConfig(StrictModel):
    """How the LLM views are written."""

    derive_from: Literal["input", "positive"] = Field(
        "input",
        description="Write the intermediate and negative from the input sentence (NGCSE's prompts) "
        "or from the generated positive (NGCSE's process description, step 3).",
    )
    prompts_dir: str | None = Field(
        None, description="Directory of prompt templates; default: ./prompts."
    )


class CleaningConfig(StrictModel):
    """Validation of LLM answers; a rejected answer goes to rejects.parquet with its reason."""

    min_length_ratio: float = Field(
        0.25,
        gt=0,
        description="Reject a sentence view shorter than this × the input's length (in words).",
    )
    max_length_ratio: float = Field(
        3.0,
        gt=0,
        description="Reject a sentence view longer than this × the input's length (in words).",
    )
    knowledge_max_sentences: int = Field(
        4,
        ge=1,
        description="SKICSE asks for at most four sentences; longer knowledge is cut to this many.",
    )
    extra_refusal_patterns: list[str] = Field(
        default_factory=list,
        description="More regular expressions that mark an answer as a refusal.",
    )
    prompt_echo_max_overlap: float | None = Field(
        0.5,
        gt=0,
        le=1,
        description="Reject an answer as 'prompt_echo' when at least this share of its word "
        "5-grams appear in the prompt's instructions or examples but not in the input sentence "
        "(an answer of fewer than 5 words: when it repeats a whole line of the prompt); "
        "null: no check.",
    )
