"""The fingerprints of every input a build reads besides its config, which name its run store
with the config's, so that a rebuild never reuses shards made from an input replaced under the
same name (docs/prefect.md, "Reuse of finished shards").

Example:
    >>> from cseaug.config import load_config
    >>> sorted(input_fingerprints(load_config("configs/demo.yaml")))
    ['corpus', 'prompts']
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cseaug.config import LLM_METHODS, PATTERN_METHODS, RunConfig
from cseaug.hashing import path_sha256
from cseaug.hub import cached_file, is_local_name


def model_identity(name: str) -> dict[str, str]:
    """A local model directory's content sha256, or a hub model's name and cached revision."""
    if is_local_name(name):
        return {"path": name, "sha256": path_sha256(Path(name).expanduser())}
    found = cached_file(name)  # <cache>/models--org--name/snapshots/<commit>/config.json
    return {"hub": name, "revision": Path(found).parent.name if found else "not cached"}


def input_fingerprints(cfg: RunConfig) -> dict[str, Any]:
    """Every input of ``cfg`` that is not in the config, by kind; an InputError where one
    does not exist (the preflight has said so already)."""
    from cseaug.readers.corpus import open_corpus

    out: dict[str, Any] = {"corpus": open_corpus(cfg.corpus).input_sha256()}
    if cfg.method in LLM_METHODS:
        from cseaug.prompts import load_method_prompts

        prompts = load_method_prompts(cfg.method, cfg.generation.prompts_dir)
        out["prompts"] = {view: template.sha256 for view, template in sorted(prompts.items())}
    if cfg.judge_llm is not None:
        from cseaug.prompts import load_prompt
        from cseaug.quality.judge import judge_prompt_name

        name = judge_prompt_name(cfg.method)
        out["judge_prompt"] = load_prompt(name, cfg.generation.prompts_dir).sha256
    if cfg.method in PATTERN_METHODS and cfg.patterns is not None and cfg.patterns.path:
        out["patterns"] = path_sha256(cfg.patterns.path)
    if cfg.method == "osscse":
        out["translation_models"] = {
            pivot: [model_identity(name) for name in pair]
            for pivot, pair in sorted(cfg.backtranslation.pivots.items())
        }
    if cfg.method == "generate_cse" and cfg.generate_cse.generator is not None:
        out["generator"] = path_sha256(cfg.generate_cse.generator)
    return out
