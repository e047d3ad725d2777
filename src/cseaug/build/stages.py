"""Which stage writes the views of a run: one factory per ``method``.

The pipeline asks :func:`make_stage` and never knows which paper, model or backend is
behind the stage. Factories import their heavy dependencies lazily, so choosing the ``sts``
method never imports spaCy or torch.
"""

from __future__ import annotations

from typing import Any

from cseaug.config import LLM_METHODS, RunConfig
from cseaug.errors import ConfigError
from cseaug.step import Stage


def make_stage(cfg: RunConfig) -> Stage:
    """The stage of ``cfg.method``, with its backend or models ready (loaded up front).

    Raises:
        ConfigError: an unknown method or a section it needs is missing.
        BackendError: the LLM or model cannot be reached or loaded.
    """
    if cfg.method in LLM_METHODS:
        from cseaug.build.llm_stages import make_llm_stage
        from cseaug.llm.factory import make_backend

        if cfg.llm is None:
            raise ConfigError(f"method '{cfg.method}' needs an 'llm' section")
        backend = make_backend(cfg.llm, cfg.cache_path)
        try:
            backend.check()  # load the model / check the key now, before any work
            return make_llm_stage(cfg, backend)
        except BaseException:
            backend.close()
            raise
    if cfg.method == "osscse":
        from cseaug.augment.osscse import make_osscse_stage

        return make_osscse_stage(cfg)
    if cfg.method == "generate_cse":
        from cseaug.augment.random_selection import make_generate_cse_stage

        return make_generate_cse_stage(cfg)
    raise ConfigError(f"unknown method '{cfg.method}'")


def stage_manifest(stage: Stage) -> dict[str, Any]:
    """What a stage records in the manifest (prompts, examples, models), if it says anything."""
    manifest = getattr(stage, "manifest", None)
    return dict(manifest()) if callable(manifest) else {}


def stage_usage(stage: Stage) -> dict[str, int]:
    """Token usage so far of the stage's LLM backend (empty for stages without one)."""
    backend = getattr(stage, "backend", None)
    usage = getattr(backend, "usage", None)
    return usage.as_dict() if usage is not None else {}
