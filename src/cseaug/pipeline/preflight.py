"""Preflight: everything a build needs, checked in seconds before any server, flow or work starts.

``cseaug build`` and its ``--dry-run`` run the same checks (docs/prefect.md, "Before the
flow"), every one even when an earlier one failed: one run reports every problem, one line
each. The LLM endpoints are probed here, once each, for the build (:attr:`Preflight.served`).
A dry run stops only on the config's inputs and lists what a real build would still need, so
it works offline and without an API key.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cseaug.config import LLM_METHODS, PATTERN_METHODS, RunConfig
from cseaug.config.fingerprint import measures_cs
from cseaug.encoders.minilm import MINILM_ID, MINILM_NAMES, minilm_problem
from cseaug.errors import CseaugError, PreflightError, os_error_message
from cseaug.hub import cached_file, go_offline_unless_reachable, is_local_name, model_problem
from cseaug.pipeline.stages import ServedModels, llm_sections, served_models
from cseaug.roots import is_uri

Check = Callable[[RunConfig], list[str] | None]
"""A check: the problems it found, or None (it raises its one problem, or has none)."""

Probed = dict[str, dict[str, Any] | None]
"""What the LLM checks' probes reported, by section (``llm``, ``quality.judge.llm``)."""


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


def corpus_problems(cfg: RunConfig) -> None:
    """The corpus opens: the file exists, its format is known, its columns are present."""
    from cseaug.readers.corpus import open_corpus

    open_corpus(cfg.corpus)


def prompt_problems(cfg: RunConfig) -> None:
    """The method's prompt templates and (NGCSE) the pattern source's examples load."""
    from cseaug.prompts import load_method_prompts

    load_method_prompts(cfg.method, cfg.generation.prompts_dir)
    if cfg.method in PATTERN_METHODS and cfg.patterns is not None:
        from cseaug.patterns import load_examples

        load_examples(cfg.patterns, cfg.method)  # type: ignore[arg-type]


def llm_problems(cfg: RunConfig, probed: Probed) -> list[str]:
    """The probes (API key, endpoint) of the LLMs of :func:`llm_sections`, what they reported
    kept in ``probed`` (a local backend's model is among :func:`hub_models`); the judge's
    problem names its section."""
    from cseaug.llm.factory import probe_served

    problems = []
    for section, llm in llm_sections(cfg).items():
        try:
            probed[section] = probe_served(llm)
        except CseaugError as exc:
            problems.append(str(exc) if section == "llm" else f"{section}: {exc}")
    return problems


def judge_prompt_problems(cfg: RunConfig) -> None:
    """The LLM judge's prompt loads and declares its version."""
    from cseaug.prompts import load_prompt
    from cseaug.quality.judge import judge_prompt_name, prompt_version

    prompt_version(load_prompt(judge_prompt_name(cfg.method), cfg.generation.prompts_dir))


def spacy_problems(cfg: RunConfig) -> None:
    """OssCSE's spaCy pipeline loads and annotates what negation reads."""
    from cseaug.augment.negation import load_pipeline

    load_pipeline(cfg.negation.spacy_model, cfg.negation.exclude)


def generator_problems(cfg: RunConfig) -> list[str]:
    """Generate-CSE's VAEGPT-Sim generator, when one is configured, is a trained generator."""
    from cseaug.vaegpt.generate import generator_problem

    generator = cfg.generate_cse.generator
    problem = generator_problem(generator) if generator is not None else None
    return [f"generate_cse.generator: {problem}"] if problem else []


def eval_data_problems(cfg: RunConfig) -> list[str]:
    """``diagnostics.eval_data_dir`` is a directory (the contamination check and filter
    read it: the diagnostics at publish, the filter at the plan) and each
    ``diagnostics.reference`` a file (the diagnostics read them at publish)."""
    from cseaug.diagnostics.contamination import eval_set_readers

    diag = cfg.diagnostics
    if diag.eval_data_dir and (diag.enabled or diag.remove_contaminated):
        eval_set_readers(diag.eval_data_dir)  # finds the sets' files; reads none
    return [
        f"diagnostics.reference.{kind}: no such file: {path}"
        for kind, path in (diag.reference.items() if diag.enabled else ())
        if not Path(path).is_file()
    ]


def hub_models(cfg: RunConfig) -> list[tuple[str, str]]:
    """Every model the build loads by name, with its setting: the local LLM (and judge), the
    translation models and the sentence encoder (the generator and the spaCy pipeline are
    checked on their own)."""
    from cseaug.llm.factory import LOCAL_BACKENDS, resolve_backend

    models = [
        (llm.model, f"{section}.model")
        for section, llm in llm_sections(cfg).items()
        if resolve_backend(llm.backend) in LOCAL_BACKENDS
    ]
    if cfg.method == "osscse":
        for pivot, pair in cfg.backtranslation.pivots.items():
            models += [(name, f"backtranslation.pivots.{pivot}") for name in pair]
    if measures_cs(cfg) and not minilm_cached(cfg):
        models.append((cfg.diagnostics.encoder, "diagnostics.encoder"))
    return models


def minilm_cached(cfg: RunConfig) -> bool:
    """Whether the encoder is the default all-MiniLM-L6-v2 with its pinned revision in the
    Hugging Face cache: it then needs neither a check nor the hub's probe."""
    diag = cfg.diagnostics
    return diag.encoder in MINILM_NAMES and bool(
        cached_file(MINILM_ID, revision=diag.encoder_revision)
    )


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
        if setting == "diagnostics.encoder" and name in MINILM_NAMES:
            found = minilm_problem(cfg.diagnostics.encoder_revision)  # the pinned revision
            problem = f"{setting}: {found}" if found else None
        else:
            problem = model_problem(name, setting)
        if problem and setting == "llm.model":
            from cseaug.llm.transformers_backend import ENDPOINT_HINT

            problem += f". {ENDPOINT_HINT}"
        if problem:
            problems.append(problem)
    return problems


def input_checks(cfg: RunConfig) -> list[Check]:
    """The checks of the config's inputs, which a dry run needs as well."""
    checks: list[Check] = [corpus_problems]
    if cfg.method in LLM_METHODS:
        checks.append(prompt_problems)
        if cfg.quality.judge is not None:
            checks.append(judge_prompt_problems)
    return checks


def build_checks(cfg: RunConfig, say: Callable[[str], None], probed: Probed) -> list[Check]:
    """The checks of what only a real build needs, cheapest first; the LLM probes keep what
    the endpoints reported in ``probed``."""
    checks: list[Check] = [storage_root_problems, eval_data_problems]
    if cfg.method in LLM_METHODS:
        checks.append(lambda c: llm_problems(c, probed))
    if cfg.method == "osscse":
        checks.append(spacy_problems)
    if cfg.method == "generate_cse":
        checks.append(generator_problems)
    return [*checks, lambda c: model_problems(c, say)]


@dataclass(frozen=True)
class Preflight:
    """What the preflight found, one line per problem."""

    inputs: list[str]
    """The config's inputs do not load: neither a build nor a dry run can start."""
    build_needs: list[str]
    """What only a real build needs and is missing (a dry run lists it)."""
    served: ServedModels
    """What the LLM endpoints reported, for the build (complete when there is no problem)."""

    @property
    def problems(self) -> list[str]:
        """Every problem, the inputs' first."""
        return [*self.inputs, *self.build_needs]


def run_checks(cfg: RunConfig, checks: list[Check]) -> list[str]:
    """Every problem of every check, one line each (an error a check raises is its problem)."""
    problems: list[str] = []
    for check in checks:
        try:
            problems += check(cfg) or []
        except CseaugError as exc:
            problems.append(str(exc))
        except OSError as exc:
            problems.append(os_error_message(exc))
    return problems


def preflight(cfg: RunConfig, say: Callable[[str], None] = print) -> Preflight:
    """Run every check of ``cfg`` (``say`` prints the hub probe's note, if any)."""
    probed: Probed = {}
    inputs = run_checks(cfg, input_checks(cfg))
    build_needs = run_checks(cfg, build_checks(cfg, say, probed))
    served = served_models(cfg, probed)
    return Preflight(inputs=inputs, build_needs=build_needs, served=served)


def check_before_build(
    cfg: RunConfig, say: Callable[[str], None] = print, *, dry_run: bool = False
) -> Preflight:
    """Raise :class:`PreflightError` listing every problem that stops the build (a dry run:
    only the inputs'), else return what was found."""
    found = preflight(cfg, say)
    if dry_run and found.inputs:
        raise PreflightError(found.inputs, "the dry run")
    if not dry_run and found.problems:
        raise PreflightError(found.problems)
    return found
