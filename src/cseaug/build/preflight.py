"""Preflight: everything a build needs, checked in seconds before any server, flow or work starts.

``cseaug build`` and ``cseaug build --dry-run`` run the same checks (issue 11, items 1 and 2):
the storage root can be written, the corpus opens with its columns, the prompts and the
pattern source load, the LLM backend passes its own ``check()`` (API key, endpoint) or its
model can be had (so does the LLM judge's, with its versioned prompt), the spaCy pipeline loads, every translation model and the VAEGPT-Sim
generator can be had (a local directory, or in the Hugging Face cache when the hub is
offline). Every check runs even when an earlier one failed, so that one run reports every
problem, one line each.

Models come from the hub only when the hub answers: when a hub model is needed, the hub is
probed once (:func:`cseaug.hub.go_offline_unless_reachable`) and, unreachable, the process
works offline from then on, so that no library retries.

Example:
    >>> from cseaug.config import load_config
    >>> preflight_problems(load_config("configs/demo.yaml"))  # doctest: +SKIP
    []
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from cseaug.config import LLM_METHODS, PATTERN_METHODS, LLMConfig, RunConfig
from cseaug.errors import CseaugError, PreflightError, os_error_message
from cseaug.hub import go_offline_unless_reachable, is_local_name, model_problem
from cseaug.roots import is_uri

Check = Callable[[RunConfig], list[str]]
"""A check: the problems it found (a check may also raise a CseaugError or an OSError)."""

LOCAL_BACKENDS = frozenset({"transformers", "vllm"})
"""Backends that load the model in this process (every other one sends requests to an API)."""


def storage_root_problems(cfg: RunConfig) -> list[str]:
    """The local directory a build writes (``output.root``, or for an object-store root its
    work directory: run store, caches, staging), or its nearest existing parent, must be a
    writable directory."""
    remote = is_uri(cfg.output.root)
    root = cfg.work_dir if remote else Path(cfg.output.root)
    setting = "execution.work_dir" if remote else "output.root"
    existing = next((p for p in (root, *root.parents) if p.exists()), Path("."))
    if not existing.is_dir():
        return [f"{setting} {root}: {existing} is not a directory"]
    if not os.access(existing, os.W_OK | os.X_OK):
        return [
            f"{setting} {root}: permission denied: {existing} is not writable by this user; "
            f"choose a writable directory (--set {setting}=...)"
        ]
    return []


def corpus_problems(cfg: RunConfig) -> list[str]:
    """The corpus opens: the file exists, its format is known, its columns are present."""
    from cseaug.readers.corpus import open_corpus

    open_corpus(cfg.corpus)
    return []


def prompt_problems(cfg: RunConfig) -> list[str]:
    """The method's prompt templates and (NGCSE) the pattern source's examples load."""
    from cseaug.prompts import load_method_prompts

    load_method_prompts(cfg.method, cfg.generation.prompts_dir)
    if cfg.method in PATTERN_METHODS and cfg.patterns is not None:
        from cseaug.patterns import load_examples

        load_examples(cfg.patterns, cfg.method)  # type: ignore[arg-type]
    return []


def llm_problems(cfg: RunConfig) -> list[str]:
    """An API backend's own check (API key, endpoint); a local backend's model is among
    :func:`hub_models`."""
    assert cfg.llm is not None  # RunConfig guarantees it for LLM methods
    check_api_backend(cfg.llm)
    return []


def judge_problems(cfg: RunConfig) -> list[str]:
    """The LLM judge's prompt loads and declares its version; its own ``llm`` section (when
    it has one) passes :func:`check_api_backend`."""
    from cseaug.prompts import load_prompt
    from cseaug.quality.judge import judge_prompt_name, prompt_version

    assert cfg.quality.judge is not None  # checks_for asks only then
    prompt_version(load_prompt(judge_prompt_name(cfg.method), cfg.generation.prompts_dir))
    if cfg.quality.judge.llm is None:
        return []  # the build's llm section, checked by llm_problems
    try:
        check_api_backend(cfg.quality.judge.llm)
    except CseaugError as exc:
        return [f"quality.judge.llm: {exc}"]
    return []


def check_api_backend(llm: LLMConfig) -> None:
    """An API backend's own check (API key, endpoint), nothing for a local backend."""
    from cseaug.llm.factory import make_backend, resolve_backend

    if resolve_backend(llm.backend) in LOCAL_BACKENDS:
        return
    backend = make_backend(llm, None)  # no cache: nothing is written before the build
    try:
        backend.check()
    finally:
        backend.close()


def spacy_problems(cfg: RunConfig) -> list[str]:
    """OssCSE's spaCy pipeline loads and annotates what negation reads."""
    from cseaug.augment.negation import load_pipeline

    load_pipeline(cfg.negation.spacy_model, cfg.negation.exclude)
    return []


def generator_problems(cfg: RunConfig) -> list[str]:
    """Generate-CSE's VAEGPT-Sim generator, when one is configured, is a trained generator."""
    from cseaug.vaegpt.generate import generator_problem

    generator = cfg.generate_cse.generator
    problem = generator_problem(generator) if generator is not None else None
    return [f"generate_cse.generator: {problem}"] if problem else []


def hub_models(cfg: RunConfig) -> list[tuple[str, str]]:
    """Every model the build loads by name, with its setting: the local LLM and the
    translation models (the generator and the spaCy pipeline are checked on their own)."""
    models: list[tuple[str, str]] = []
    if cfg.method in LLM_METHODS and cfg.llm is not None:
        from cseaug.llm.factory import resolve_backend

        if resolve_backend(cfg.llm.backend) in LOCAL_BACKENDS:
            models.append((cfg.llm.model, "llm.model"))
        judge = cfg.quality.judge.llm if cfg.quality.judge is not None else None
        if judge is not None and resolve_backend(judge.backend) in LOCAL_BACKENDS:
            models.append((judge.model, "quality.judge.llm.model"))
    if cfg.method == "osscse":
        for pivot, pair in cfg.backtranslation.pivots.items():
            models += [(name, f"backtranslation.pivots.{pivot}") for name in pair]
    return models


def model_problems(cfg: RunConfig, say: Callable[[str], None]) -> list[str]:
    """Each model of :func:`hub_models` can be had; the hub is probed once, when a model or
    the corpus (``corpus.hf_dataset``) is to come from it."""
    models = hub_models(cfg)
    hub_names = [name for name, _ in models] + [cfg.corpus.hf_dataset or "."]
    if any(not is_local_name(name) for name in hub_names):
        notice = go_offline_unless_reachable()
        if notice:
            say(notice)
    problems = []
    for name, setting in models:
        problem = model_problem(name, setting)
        if problem and setting == "llm.model":
            from cseaug.llm.transformers_backend import ENDPOINT_HINT

            problem += f". {ENDPOINT_HINT}"
        if problem:
            problems.append(problem)
    return problems


def checks_for(cfg: RunConfig) -> list[Check]:
    """The checks of ``cfg``'s method, cheapest first."""
    checks: list[Check] = [storage_root_problems, corpus_problems]
    if cfg.method in LLM_METHODS:
        checks += [prompt_problems, llm_problems]
        if cfg.quality.judge is not None:
            checks.append(judge_problems)
    if cfg.method == "osscse":
        checks.append(spacy_problems)
    if cfg.method == "generate_cse":
        checks.append(generator_problems)
    return checks


def preflight_problems(cfg: RunConfig, say: Callable[[str], None] = print) -> list[str]:
    """Run every check of ``cfg`` and return every problem, one line each (none: ready)."""
    problems: list[str] = []
    for check in [*checks_for(cfg), lambda c: model_problems(c, say)]:
        try:
            problems += check(cfg)
        except CseaugError as exc:
            problems.append(str(exc))
        except OSError as exc:
            problems.append(os_error_message(exc))
    return problems


def check_before_build(cfg: RunConfig, say: Callable[[str], None] = print) -> None:
    """Raise :class:`PreflightError` listing every problem of ``cfg`` (see the module docstring)."""
    problems = preflight_problems(cfg, say)
    if problems:
        raise PreflightError(problems)
