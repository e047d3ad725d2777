"""The one place that ties a run config to the stages of :mod:`cseaug.augment`: one factory
per ``method`` (models loaded up front, heavy packages imported only there, whatever was
loaded closed again on a failure) and the LLM judge of ``quality.judge``.

The LLM endpoints of a build are probed once (:func:`probe_llms`); what they reported
(:class:`ServedModels`) is part of the backend identity and goes down with the plan to every
stage and judge, which do not probe again (docs/llm-backends.md, "What identifies a model").

Example:
    >>> from cseaug.config import RunConfig
    >>> cfg = RunConfig.model_validate({"name": "g", "method": "generate_cse", "corpus": {"path": "c.txt"}})
    >>> make_stage(cfg, ServedModels()).name
    'generate_cse'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from cseaug.config import LLM_METHODS, LLMConfig, RunConfig
from cseaug.step import Step

if TYPE_CHECKING:
    from cseaug.augment.generate_cse import GenerateCSEStage
    from cseaug.augment.ngcse import PatternSimulationStage
    from cseaug.augment.osscse import OssCSEStage
    from cseaug.augment.skicse import SKIStage
    from cseaug.llm.base import LLMBackend
    from cseaug.quality.judge import LLMJudge

StepT = TypeVar("StepT", bound=Step)


@dataclass(frozen=True)
class ServedModels:
    """What the API endpoints of the build's ``llm`` and of its ``judge`` (the build's without
    an ``llm`` of its own) reported about their models; None where nothing was probed."""

    llm: dict[str, Any] | None = None
    judge: dict[str, Any] | None = None


def llm_sections(cfg: RunConfig) -> dict[str, LLMConfig]:
    """The LLMs of ``cfg`` by section: the build's ``llm`` (LLM methods) and the judge's own
    ``quality.judge.llm``."""
    judge = cfg.quality.judge
    sections = {
        "llm": cfg.llm if cfg.method in LLM_METHODS else None,
        "quality.judge.llm": judge.llm if judge is not None else None,
    }
    return {section: llm for section, llm in sections.items() if llm is not None}


def probe_llms(cfg: RunConfig) -> ServedModels:
    """Probe the endpoint of each API LLM of :func:`llm_sections` once; a BackendError for the
    first whose API key is missing or whose endpoint cannot answer for its model."""
    from cseaug.llm.factory import probe_served

    return served_models(cfg, {name: probe_served(llm) for name, llm in llm_sections(cfg).items()})


def served_models(cfg: RunConfig, probed: dict[str, dict[str, Any] | None]) -> ServedModels:
    """The :class:`ServedModels` of ``cfg`` from what the probes of :func:`llm_sections`
    reported, by section (a judge without an ``llm`` of its own uses the build's)."""
    llm = probed.get("llm")
    if cfg.judge_llm is None:
        return ServedModels(llm=llm)
    return ServedModels(llm=llm, judge=probed.get("quality.judge.llm", llm))


def make_stage(cfg: RunConfig, served: ServedModels, spent_by: str | None = None) -> Step:
    """The stage of ``cfg.method``, with its backend or models ready; ``served`` is what the
    build's LLM endpoint reported, ``spent_by`` (the build's run id) tags what the backend
    pays for in the response cache, so that the manifest can say what the build spent."""
    if cfg.method == "osscse":
        return make_osscse_stage(cfg)
    if cfg.method == "generate_cse":
        return make_generate_cse_stage(cfg)
    from cseaug.llm.factory import make_backend

    assert cfg.llm is not None  # RunConfig requires it of the LLM methods
    backend = make_backend(cfg.llm, cfg.cache_path, spent_by, served.llm)
    return on_checked_backend(backend, lambda checked: make_llm_stage(cfg, checked))


def make_judge(cfg: RunConfig, served: ServedModels, spent_by: str) -> LLMJudge | None:
    """The LLM judge of ``quality.judge`` (None without one) on a backend of its own, checked
    now, its requests tagged in the response cache apart from generation's."""
    llm = cfg.judge_llm
    if llm is None:
        return None
    from cseaug.llm.factory import make_backend
    from cseaug.quality.judge import LLMJudge, judge_spent_by

    backend = make_backend(llm, cfg.cache_path, judge_spent_by(spent_by), served.judge)
    return on_checked_backend(backend, lambda checked: LLMJudge.from_config(cfg, checked))


def on_checked_backend(backend: LLMBackend, make: Callable[[LLMBackend], StepT]) -> StepT:
    """``make(backend)`` once ``backend.check()`` passed (the model loaded, the key checked,
    before any work); the backend is closed again when either fails."""
    try:
        backend.check()
        return make(backend)
    except BaseException:
        backend.close()
        raise


def make_llm_stage(cfg: RunConfig, backend: LLMBackend) -> PatternSimulationStage | SKIStage:
    """The NGCSE or SKICSE stage of ``cfg.method`` on ``backend`` (which it closes when it is
    closed; the dry run passes a recording backend), with the run's examples and prompts."""
    from cseaug.augment.ngcse import PatternSimulationStage
    from cseaug.augment.skicse import SKIStage
    from cseaug.patterns import load_examples
    from cseaug.prompts import load_method_prompts

    prompts = load_method_prompts(cfg.method, cfg.generation.prompts_dir)
    if cfg.method == "ski":
        return SKIStage(backend, prompts, cfg.cleaning)
    assert cfg.patterns is not None  # RunConfig requires it of sts and nli
    examples = load_examples(cfg.patterns, cfg.method)  # type: ignore[arg-type]
    return PatternSimulationStage(
        cfg.method, backend, examples, prompts, cfg.cleaning, cfg.generation
    )


def make_osscse_stage(cfg: RunConfig) -> OssCSEStage:
    """The OssCSE stage: the ``negation`` section's spaCy pipeline, then the
    ``backtranslation`` section's translation models, all loaded now."""
    from cseaug.augment.backtranslate import BackTranslationStage, BackTranslator
    from cseaug.augment.negation import NegationStage, Negator
    from cseaug.augment.osscse import OssCSEStage

    negation = NegationStage(Negator.from_config(cfg.negation))
    return OssCSEStage(
        negation, BackTranslationStage(BackTranslator.from_config(cfg.backtranslation))
    )


def make_generate_cse_stage(cfg: RunConfig) -> GenerateCSEStage:
    """The Generate-CSE stage, with the generator named by ``generate_cse.generator`` (if any) loaded."""
    from cseaug.augment.generate_cse import GenerateCSEStage

    section = cfg.generate_cse
    generator = None
    if section.generator is not None:
        from cseaug.vaegpt.generate import VAEGPTSimGenerator

        generator = VAEGPTSimGenerator.load(section.generator, section.generation)
    return GenerateCSEStage(section, generator)
