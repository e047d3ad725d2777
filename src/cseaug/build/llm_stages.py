"""Build the stage of an LLM method (``sts``, ``nli``, ``ski``) from a run config.

The one place that ties the ``patterns``, ``generation`` and ``cleaning`` sections to the
stages, so that the Prefect task stays a thin wrapper. The stage's
:meth:`~cseaug.augment.pattern_sim.PatternSimulationStage.manifest` gives the prompt and
example records for ``build_manifest(prompts=..., example_set=...)``.

Example:
    >>> from cseaug.config import load_config
    >>> stage = make_llm_stage(load_config("configs/demo.yaml"), backend)  # doctest: +SKIP
    >>> stage.manifest()["prompts"][0]["name"]  # doctest: +SKIP
    'sts_positive'
"""

from __future__ import annotations

from cseaug.augment.pattern_sim import PatternSimulationStage
from cseaug.augment.ski import SKIStage
from cseaug.config import PATTERN_METHODS, RunConfig
from cseaug.errors import ConfigError
from cseaug.llm.base import LLMBackend
from cseaug.patterns import load_examples
from cseaug.prompts import load_method_prompts


def make_llm_stage(cfg: RunConfig, backend: LLMBackend) -> PatternSimulationStage | SKIStage:
    """The NGCSE or SKICSE stage of ``cfg.method``, with the run's examples and prompts.

    Raises:
        ConfigError: the method is not an LLM method, or its pattern source or prompts
            cannot be loaded.
    """
    prompts = load_method_prompts(cfg.method, cfg.generation.prompts_dir)
    if cfg.method == "ski":
        return SKIStage(backend, prompts, cfg.cleaning)
    if cfg.method in PATTERN_METHODS and cfg.patterns is not None:
        examples = load_examples(cfg.patterns, cfg.method)  # type: ignore[arg-type]
        return PatternSimulationStage(
            cfg.method, backend, examples, prompts, cfg.cleaning, cfg.generation
        )
    raise ConfigError(f"method {cfg.method!r} needs a 'patterns' section (the pattern source)")
