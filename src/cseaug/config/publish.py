"""The ``publish`` section: the gates a finished build passes before it publishes."""

from __future__ import annotations

from pydantic import Field

from cseaug.config.base import StrictModel


class PublishConfig(StrictModel):
    """When a finished build may publish (docs/prefect.md, "The publish gate"); not part of
    the fingerprint: it decides whether data is published, not what the data is."""

    min_generated_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="LLM methods (sts, nli, ski) publish only when at least this share of the "
        "sampled anchors got generated views; every method needs at least one (0: no gate).",
    )
    min_pattern_share: float = Field(
        0.7,
        ge=0,
        le=1,
        description="NGCSE builds (sts, nli) publish only when at least this share of the "
        "generated rows keep the graded order (cosine similarity to the anchor: positive > "
        "intermediate > negative) with the diagnostics encoder; human-written data keep it "
        "in 88-94% (docs/quality.md, 'The quality gate'); 0: no gate.",
    )
