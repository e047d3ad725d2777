"""The ``negation`` and ``backtranslation`` sections: OssCSE's two steps (docs/osscse.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from cseaug.config.base import AUTO, BatchSize, StrictModel

SPACY_COMPONENTS_NOT_NEEDED: tuple[str, ...] = (
    "ner",
    "entity_ruler",
    "entity_linker",
    "textcat",
    "textcat_multilabel",
    "spancat",
    "span_finder",
    "senter",
)
"""spaCy components negation never reads: excluded when the pipeline is loaded."""


class NegationConfig(StrictModel):
    """OssCSE negation insertion at the dependency root (section 4, Step 1)."""

    spacy_model: str = Field("en_core_web_sm", description="Installed spaCy pipeline name or path.")
    batch_size: int = Field(256, ge=1, description="Sentences per nlp.pipe batch.")
    n_process: int = Field(1, ge=1, description="Processes of nlp.pipe.")
    exclude: list[str] = Field(
        default_factory=lambda: list(SPACY_COMPONENTS_NOT_NEEDED),
        description="Pipeline components not loaded: the rules need only tags, the parse and lemmas.",
    )


class BacktranslationConfig(StrictModel):
    """OssCSE back-translation with an MER filter (section 4, Step 2; appendix A)."""

    pivots: dict[str, tuple[str, str]] = Field(
        default_factory=lambda: {
            "de": ("facebook/wmt19-en-de", "facebook/wmt19-de-en"),
            "ru": ("facebook/wmt19-en-ru", "facebook/wmt19-ru-en"),
        },
        description="Pivot language -> (forward model, backward model), names or paths.",
    )
    mer_range: tuple[float, float] = Field(
        (0.15, 0.6), description="Keep a candidate whose MER lies in this closed range."
    )
    prefer: Literal["higher_mer", "lower_mer", "first_pivot"] = Field(
        "higher_mer", description="Which qualifying pivot to keep when several qualify."
    )
    num_beams: int = Field(5, ge=1, description="Beams of each translation.")
    batch_size: BatchSize = Field(
        AUTO,
        description="Sentences per generate() call (length-sorted); 'auto': 32 on the CPU, on a GPU "
        "as many as the free memory holds (halved and remembered on out of memory).",
    )
    max_new_tokens: int = Field(256, ge=1, description="Maximum tokens of one translation.")
    max_length_ratio: float | None = Field(
        2.0,
        gt=0,
        description="Also cap a batch's translations at this x its longest source (tokens) + 8, so a "
        "degenerate beam cannot run a batch of short sentences to max_new_tokens; null: no cap.",
    )
    device: str = Field("auto", description="auto, cpu, cuda, ...")
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        "auto", description="'auto': float16 on GPU, float32 on CPU."
    )

    @model_validator(mode="after")
    def _range(self) -> BacktranslationConfig:
        low, high = self.mer_range
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(
                f"backtranslation.mer_range {list(self.mer_range)} must be [low, high] with 0 <= low <= high <= 1"
            )
        if not self.pivots:
            raise ValueError("backtranslation.pivots is empty; give at least one pivot, e.g. de")
        return self
