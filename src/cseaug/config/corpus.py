"""The ``corpus`` and ``sample`` sections: where the source sentences come from, how they
are cleaned, and which of them get views (docs/corpus.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from cseaug.config.base import StrictModel

ViewName = Literal["positive", "intermediate", "negative", "knowledge"]


class CorpusConfig(StrictModel):
    """Where the source sentences come from and how they are cleaned."""

    name: str | None = Field(
        None,
        description="Name of the corpus, part of every row id (hash of name + text). "
        "Defaults to the file stem or the dataset id.",
    )
    path: str | None = Field(None, description="Local file: .txt, .csv, .tsv, .jsonl, .parquet.")
    hf_dataset: str | None = Field(
        None, description="Hugging Face dataset id, read with `datasets` (extra 'hf')."
    )
    hf_config: str | None = Field(None, description="Configuration name of `hf_dataset`.")
    hf_split: str = Field("train", description="Split of `hf_dataset` to read.")
    format: Literal["auto", "text", "csv", "tsv", "jsonl", "parquet", "hf"] = Field(
        "auto", description="File format; 'auto' decides by the file suffix."
    )
    text_column: str | None = Field(
        None, description="Column holding the sentence (required for every format but text)."
    )
    view_columns: dict[ViewName, str] = Field(
        default_factory=dict,
        description="Columns carried as given views, e.g. {positive: sent1, negative: hard_neg} "
        "for NLI triples (SKICSE quadruplets keep them beside the generated knowledge).",
    )
    min_chars: int = Field(
        1, ge=1, description="Lines shorter than this (after normalising) are dropped."
    )
    max_chars: int = Field(
        1000,
        ge=1,
        description="Lines longer than this (after normalising) are dropped as over-long.",
    )
    invisible_characters: Literal["remove", "reject", "keep"] = Field(
        "remove",
        description="Invisible characters (Unicode's Default_Ignorable_Code_Point: zero-width "
        "spaces, bidirectional controls, tag characters U+E0000-U+E007F, ...; zero-width "
        "joiners only at a line's edges): 'remove' them (a line left empty is rejected as "
        "'empty'), 'reject' the line ('invisible_characters'), or 'keep' them.",
    )
    special_tokens: Literal["reject", "keep"] = Field(
        "reject",
        description="Chat special tokens in a line or a given view (<|im_end|>, <|endoftext|>, "
        "[INST], <<SYS>>, <start_of_turn>, <s>, ...): 'reject' the line ('special_token') or 'keep' it.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> CorpusConfig:
        if (self.path is None) == (self.hf_dataset is None):
            raise ValueError("give exactly one of corpus.path or corpus.hf_dataset")
        if self.min_chars > self.max_chars:
            raise ValueError(
                f"corpus.min_chars ({self.min_chars}) exceeds corpus.max_chars ({self.max_chars})"
            )
        return self


class SampleConfig(StrictModel):
    """The seeded choice of source sentences; the rest of the corpus become `other` rows."""

    size: int = Field(
        20_000, ge=1, description="Number of source sentences that get generated views."
    )
    seed: int = Field(42, description="Seed of the sample; same seed, same sample on any machine.")
    include_other: bool = Field(
        True, description="Publish the rest of the corpus as `other` rows (the hybrid dataset)."
    )
