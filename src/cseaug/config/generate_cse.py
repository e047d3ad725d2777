"""The ``generate_cse`` section: VAEGPT-Sim's generator decoding and Generate-CSE's random
selection (docs/vaegpt.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from cseaug.config.base import StrictModel


class SynonymGenerationConfig(StrictModel):
    """Decoding of a synonym generator: beam search with sampling (VAEGPT-Sim, appendix A.1)."""

    num_beams: int = Field(3, ge=1, description="Beams of beam search (the paper uses 3).")
    do_sample: bool = Field(
        True, description="Sample within beam search (the paper's 'Beam Search with Sampling')."
    )
    no_repeat_ngram_size: int = Field(
        4, ge=0, description="Block repeated n-grams of this size (the paper uses 4; 0: off)."
    )
    temperature: float = Field(1.0, gt=0, description="Sampling temperature.")
    top_k: int = Field(50, ge=0, description="Sample among the k most likely tokens (0: no limit).")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass (1.0: off).")
    max_new_tokens: int = Field(64, ge=1, description="Maximum tokens of one generated sentence.")
    max_source_tokens: int = Field(
        128, ge=1, description="Source sentences are cut to this many tokens."
    )
    batch_size: int = Field(
        32, ge=1, description="Source sentences per generate() call (length-sorted)."
    )
    seed: int = Field(
        0, description="Seed of the sampling; each batch is seeded from it and its sentences."
    )
    device: str = Field("auto", description="auto (cuda when available), cpu, cuda, cuda:1, ...")
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = Field(
        "auto", description="Weights dtype at generation; 'auto': float16 on GPU, float32 on CPU."
    )


GENERATE_CSE_METHODS: tuple[str, ...] = ("shuffle", "cutoff", "dropout", "repetition", "generator")
"""The Generate-CSE random-selection methods (section 3.2, appendix A.1)."""


class GenerateCSEConfig(StrictModel):
    """VAEGPT-Sim generator and Generate-CSE random selection (section 3.2, appendix A.1)."""

    generator: str | None = Field(
        None,
        description="Path of a trained VAEGPT-Sim generator; None leaves the generator out of the draw.",
    )
    views: int = Field(1, ge=1, description="Views per sentence (one per training epoch).")
    seed: int = Field(0, description="Seed of the random selection.")
    probabilities: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=lambda: dict.fromkeys(GENERATE_CSE_METHODS, 0.2),
        description="Probability of each method (shuffle, cutoff, dropout, repetition, generator); "
        "renormalised over the methods available.",
    )
    dropout_rate: float = Field(
        0.1, ge=0, lt=1, description="Token dropout: chance that each word is deleted."
    )
    generation: SynonymGenerationConfig = Field(
        default_factory=SynonymGenerationConfig, description="Decoding of the generator."
    )

    @model_validator(mode="after")
    def _known_methods(self) -> GenerateCSEConfig:
        unknown = sorted(set(self.probabilities) - set(GENERATE_CSE_METHODS))
        if unknown:
            raise ValueError(
                f"generate_cse.probabilities: unknown method(s) {unknown}; use {list(GENERATE_CSE_METHODS)}"
            )
        usable = {k: v for k, v in self.probabilities.items() if v > 0}
        if self.generator is None:
            usable.pop("generator", None)
        if not usable:
            raise ValueError(
                "generate_cse.probabilities gives no available method a positive probability "
                "(the generator counts only when generate_cse.generator is set)"
            )
        return self
