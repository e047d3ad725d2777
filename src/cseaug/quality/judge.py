"""The optional LLM judge: a second model scores each generated row's views against the
method's definition (NGCSE's appendix "Details of the Prompt", SKICSE's section 3.1), one
request per row with the method's versioned prompt (``prompts/judge_<method>.jinja2``); a row
is kept when every view scores at least ``quality.judge.min_score`` (docs/quality.md, "The
LLM judge", says what becomes of the others).

Example:
    >>> parse_verdict('{"scores": {"knowledge": 4}, "reason": "Accurate."}', ("knowledge",))
    Verdict(scores={'knowledge': 4}, reason='Accurate.')
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cseaug.augment.llm_views import REJECT_STAGE as LLM_STAGE
from cseaug.augment.llm_views import LLMStep, failure, require_columns, send
from cseaug.config import LLM_METHODS, RunConfig
from cseaug.dataset.schema import reject_record, rejects_table
from cseaug.errors import ConfigError
from cseaug.llm.base import ChatRequest, ChatResponse, LLMBackend
from cseaug.prompts import METHOD_PROMPTS, PromptTemplate, load_prompt
from cseaug.secrets import Scrubber
from cseaug.step import StepResult

REJECT_STAGE = "quality"  # of the rejects for answers the judge could read
JUDGE = "judge"  # the step, the reason of a low score, the view of a failed request
UNPARSEABLE = "judge_unparseable"  # an answer that is not the JSON object asked for
KEPT = "kept"  # the outcome of a row that passed (the step's stats)

MIN_SCORE, MAX_SCORE = 1, 5
_VERSION = re.compile(r"^\s*version:\s*(\d+)\s*$", re.MULTILINE)


def judge_prompt_name(method: str) -> str:
    """The template of ``method``'s judge, e.g. ``judge_sts``; ConfigError for a method
    without an LLM."""
    if method not in LLM_METHODS:
        raise ConfigError(f"method {method!r} has no LLM judge; LLM methods: {sorted(LLM_METHODS)}")
    return f"judge_{method}"


def prompt_version(prompt: PromptTemplate) -> int:
    """The version a judge template declares in its header comment (a line ``version: N``);
    ConfigError when it declares none (a judge prompt changes which rows are kept).

    Example:
        >>> from cseaug.prompts import load_prompt
        >>> prompt_version(load_prompt("judge_sts"))
        1
    """
    found = _VERSION.search(prompt.path.read_text(encoding="utf-8"))
    if found is None:
        raise ConfigError(
            f"judge prompt {prompt.path} declares no version: add a line 'version: 1' to its "
            "header comment"
        )
    return int(found.group(1))


def judge_spent_by(run_id: str) -> str:
    """Who pays for a build's judge requests in the response cache (apart from generation's).

    Example:
        >>> judge_spent_by("demo-0123456789ab")
        'demo-0123456789ab/judge'
    """
    return f"{run_id}/{JUDGE}"


Score = Annotated[int, Field(ge=MIN_SCORE, le=MAX_SCORE)]


class Verdict(BaseModel):
    """The judge's scores of one row's views (1 to 5 each) and its short reason, as the prompt
    asks for them (strict: no coercion, no other keys)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    scores: dict[str, Score]
    reason: str

    def lowest(self) -> str:
        """The view with the lowest score (the first of them in view order on a tie)."""
        return min(self.scores, key=lambda view: self.scores[view])


class VerdictError(ValueError):
    """A judge answer that is not the JSON object its prompt asks for (one line: why)."""


def parse_verdict(text: str, views: Sequence[str]) -> Verdict:
    """Read a judge answer: exactly one JSON object with a 1–5 integer score for each of
    ``views`` (no other view) and a string ``reason``, whitespace around it; VerdictError with
    a one-line reason for anything else.

    Example:
        >>> parse_verdict('{"scores": {"positive": 6, "negative": 1}, "reason": ""}', ("positive", "negative"))
        Traceback (most recent call last):
        ...
        cseaug.quality.judge.VerdictError: scores.positive: Input should be less than or equal to 5
    """
    try:
        verdict = Verdict.model_validate_json(text.strip())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise VerdictError(f"{where}: {first['msg']}" if where else first["msg"]) from None
    if set(verdict.scores) != set(views):
        raise VerdictError(
            f"scores name views {sorted(verdict.scores)}, the method's are {sorted(views)}"
        )
    verdict.scores = {view: verdict.scores[view] for view in views}  # in view order
    return verdict


class LLMJudge(LLMStep):
    """Scores each row's views (``method`` ``sts``, ``nli`` or ``ski``) with ``prompt`` on
    ``backend``; keeps the rows scored at least ``min_score`` on every view."""

    name = JUDGE

    def __init__(
        self, method: str, backend: LLMBackend, prompt: PromptTemplate, min_score: int
    ) -> None:
        judge_prompt_name(method)  # raises for a method without an LLM
        self.method = method
        self.views: tuple[str, ...] = tuple(METHOD_PROMPTS[method])
        self.backend = backend
        self.prompt = prompt
        self.version = prompt_version(prompt)
        self.min_score = min_score

    @classmethod
    def from_config(cls, cfg: RunConfig, backend: LLMBackend) -> LLMJudge:
        """The judge of ``cfg.quality.judge`` on ``backend``, its prompt from
        ``generation.prompts_dir`` (default: the shipped templates)."""
        if cfg.quality.judge is None:
            raise ConfigError("quality.judge is not set: there is no judge to make")
        prompt = load_prompt(judge_prompt_name(cfg.method), cfg.generation.prompts_dir)
        return cls(cfg.method, backend, prompt, cfg.quality.judge.min_score)

    def _request(self, row: Mapping[str, Any]) -> ChatRequest:
        views = {view: row[view] for view in self.views}
        messages = self.prompt.render(sentence=row["sentence"], views=views)
        return ChatRequest(key=f"{row['id']}:{JUDGE}", messages=messages)

    def __call__(self, rows: pa.Table) -> StepResult:
        require_columns(rows, ("id", "sentence", *self.views), self.name)
        records = rows.to_pylist()
        requests = [self._request(row) for row in records]
        responses = send(self.backend, requests, f"judge {self.method}") if requests else []
        scrub = Scrubber()
        keep: list[bool] = []
        rejects: list[dict[str, Any]] = []
        outcomes: Counter[str] = Counter()
        for row, response in zip(records, responses, strict=True):
            outcome, stage, view, detail = self._decide(response)
            outcomes[outcome] += 1
            keep.append(outcome == KEPT)
            if outcome != KEPT:
                anchor, raw = (row["id"], row["sentence"]), response.text
                rejects.append(reject_record(*anchor, stage, view, outcome, raw, detail, scrub))
        stats = {
            "method": self.method,
            "prompt_version": self.version,
            "min_score": self.min_score,
            "rows_in": len(records),
            "rows_out": sum(keep),
            "outcomes": dict(sorted(outcomes.items())),
        }
        kept = rows.filter(pa.array(keep, pa.bool_()))
        return StepResult(rows=kept, rejects=rejects_table(rejects), stats=stats)

    def _decide(self, response: ChatResponse) -> tuple[str, str, str | None, dict[str, Any]]:
        """``kept`` or the reject reason of one answer, with the reject's stage, view and
        detail; a failed request is a failed generation request (stage ``llm``)."""
        if not response.ok or response.text is None:
            reason, detail = failure(response)
            return reason, LLM_STAGE, JUDGE, detail
        try:
            verdict = parse_verdict(response.text, self.views)
        except VerdictError as exc:
            return UNPARSEABLE, REJECT_STAGE, None, {"error": str(exc)}
        passed = min(verdict.scores.values()) >= self.min_score
        detail = {"scores": verdict.scores, "reason": verdict.reason, "min_score": self.min_score}
        return KEPT if passed else JUDGE, REJECT_STAGE, verdict.lowest(), detail

    def manifest(self) -> dict[str, Any]:
        """The judge's prompt record (view ``judge``, name, path, sha256 and version) and its
        model (``model.judge``), beside the stage's in the version's manifest."""
        record = {"view": JUDGE, **self.prompt.manifest(), "version": self.version}
        return {"prompts": [record], "model": {JUDGE: self.backend.identity()}}
