"""The ``quality`` section: the per-row checks of generated views and the LLM judge
(docs/quality.md)."""

from __future__ import annotations

from pydantic import Field

from cseaug.config.base import StrictModel
from cseaug.config.llm import LLMConfig


class JudgeConfig(StrictModel):
    """The optional LLM judge (docs/quality.md, "The LLM judge"); part of the fingerprint: its
    answers decide which rows a version holds."""

    llm: LLMConfig | None = Field(
        None,
        description="The judge model, any backend (same keys as the llm section); null: the "
        "build's llm section (the generating model judges its own views).",
    )
    min_score: int = Field(
        3,
        ge=1,
        le=5,
        description="Reject a row when the judge scores any of its views below this (1 to 5).",
    )


class QualityConfig(StrictModel):
    """Checks of what a build generated (docs/quality.md): the per-row checks after every
    method's stage (a failing row is a ``quality`` reject, its anchor an ``other`` row) and the
    LLM judge."""

    identical_views: bool = Field(
        True,
        description="Reject a row whose views are equal to each other after case-folding and "
        "removing punctuation and extra spaces ('identical_views').",
    )
    unchanged_view_similarity: float | None = Field(
        0.95,
        gt=0,
        le=1,
        description="Reject a row whose view that must change the anchor (NGCSE intermediate and "
        "negative, SKICSE knowledge) has at least this normalised edit similarity to the anchor "
        "('unchanged_view'); null: no check.",
    )
    language_confidence: float | None = Field(
        0.8,
        gt=0,
        le=1,
        description="Reject a row when the language identifier (py3langid) puts the anchor and "
        "one of its views, each with at least this probability, in different languages "
        "('wrong_language'); null: no check.",
    )
    hidden_text: bool = Field(
        True,
        description="Reject a row with a view that holds invisible characters "
        "('invisible_characters') or instructions to a model: tag characters, a chat special "
        "token, 'ignore the previous instructions' ('hidden_instructions').",
    )
    within_max_tokens: bool = Field(
        True,
        description="Reject a row with an LLM view of more words than llm.max_tokens allows "
        "('too_long'): the server did not stop where it was asked to.",
    )
    judge: JudgeConfig | None = Field(
        None,
        description="The LLM judge, for methods sts, nli and ski; null (default): no judge. "
        "`{}` turns it on with the build's llm section.",
    )
