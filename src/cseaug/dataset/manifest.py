"""``manifest.json`` of a version: the build writes what it knows (:func:`build_manifest`),
the writer adds the rest and checks the whole (:func:`validate_manifest`). Every key:
docs/dataset-contract.md, "manifest.json".

Example:
    >>> from cseaug.config import RunConfig
    >>> cfg = RunConfig.model_validate({"name": "demo", "method": "osscse", "corpus": {"path": "c.txt"}})
    >>> m = build_manifest(cfg)
    >>> m["fingerprints"]["config"] == m["config_fingerprint"]
    True
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from cseaug.config import RunConfig, config_fingerprint, redacted
from cseaug.dataset.counts import RowCounts
from cseaug.dataset.schema import CANONICAL_SCHEMA
from cseaug.errors import InputError
from cseaug.hashing import json_sha256
from cseaug.secrets import scrub_data

CONTRACT_VERSION = CANONICAL_SCHEMA.metadata[b"cseaug.contract"].decode()

REQUIRED_KEYS: dict[str, type | tuple[type, ...]] = {
    "contract": str,
    "dataset": str,
    "version": str,
    "created_at": str,
    "name": str,
    "method": str,
    "config": dict,
    "config_fingerprint": str,
    "fingerprints": dict,
    "inputs": dict,
    "prompts": list,
    "model": (dict, type(None)),
    "token_usage": dict,
    "timings": dict,
    "code": dict,
    "counts": dict,
    "files": list,
}

REQUIRED_COUNTS = tuple(field.name for field in fields(RowCounts))
REQUIRED_FINGERPRINTS = ("config", "build", "data")


def describe_input(value: Mapping[str, Any]) -> dict[str, Any]:
    """An input as the manifest records it, ``{"name", "files": {path: sha256}}``."""
    if not isinstance(value.get("files"), Mapping):
        raise InputError(
            f"input {dict(value)} does not identify its content: give its files' sha256 ('files')"
        )
    return dict(value)


def code_version() -> dict[str, Any]:
    """Package version and, when the package runs from a git checkout, its commit and dirty flag."""
    info: dict[str, Any] = {
        "package": "cseaug",
        "version": version("cseaug"),
        "git_commit": None,
        "git_dirty": None,
    }
    source = Path(__file__).resolve().parent

    def git(*args: str, timeout: int) -> subprocess.CompletedProcess[str]:
        command = ["git", "-C", str(source), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)

    try:
        commit = git("rev-parse", "HEAD", timeout=10)
        if commit.returncode == 0:
            info["git_commit"] = commit.stdout.strip()
            status = git("status", "--porcelain", "--untracked-files=no", timeout=30)
            info["git_dirty"] = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        pass  # no git on this machine: the package version alone identifies the code
    return info


def build_manifest(
    cfg: RunConfig,
    *,
    inputs: Mapping[str, Mapping[str, Any]] | None = None,
    prompts: Sequence[Mapping[str, Any]] = (),
    example_set: Any = None,
    model: Mapping[str, Any] | None = None,
    token_usage: Mapping[str, Any] | None = None,
    timings: Mapping[str, float] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of a build, without what the writer adds at publish time; the config
    is stored redacted and every string scrubbed of known secret values (each argument's
    key: docs/dataset-contract.md, "manifest.json")."""
    described = {role: describe_input(value) for role, value in (inputs or {}).items()}
    prompt_list = []
    for prompt in prompts:
        if "name" not in prompt or "sha256" not in prompt:
            raise InputError(f"prompt record {dict(prompt)} needs 'name' and 'sha256'")
        prompt_list.append(dict(prompt))
    config_fp = config_fingerprint(cfg)
    example_sha = json_sha256(example_set) if example_set is not None else None
    build_fp = json_sha256(
        {
            "config": config_fp,
            "inputs": {role: json_sha256(d["files"]) for role, d in described.items()},
            "prompts": sorted((p["name"], p["sha256"]) for p in prompt_list),
            "example_set": example_sha,
            "contract": CONTRACT_VERSION,
        }
    )
    manifest: dict[str, Any] = {
        "contract": CONTRACT_VERSION,
        "name": cfg.name,
        "description": cfg.description,
        "method": cfg.method,
        "config": redacted(cfg.model_dump(mode="json")),
        "config_fingerprint": config_fp,
        "fingerprints": {"config": config_fp, "build": build_fp},
        "inputs": described,
        "prompts": prompt_list,
        "example_set": {"sha256": example_sha, "examples": example_set}
        if example_set is not None
        else None,
        "model": dict(model) if model is not None else None,
        "token_usage": dict(token_usage or {}),
        "timings": dict(timings or {}),
        "code": code_version(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if extra:
        manifest["extra"] = dict(extra)
    # Redacting secret-named keys is not enough: a value (a URL, an error) may hold one.
    return scrub_data(manifest)


def validate_manifest(manifest: Mapping[str, Any]) -> None:
    """Raise InputError naming every required key that is missing or mistyped, or a secret
    left in ``config``."""
    problems = []
    for key, kind in REQUIRED_KEYS.items():
        if key not in manifest:
            problems.append(f"missing '{key}'")
        elif not isinstance(manifest[key], kind):
            problems.append(f"'{key}' is {type(manifest[key]).__name__}")
    for section, required in (("counts", REQUIRED_COUNTS), ("fingerprints", REQUIRED_FINGERPRINTS)):
        if isinstance(found := manifest.get(section), Mapping):
            problems += [f"missing '{section}.{k}'" for k in required if k not in found]
    if problems:
        raise InputError("manifest is incomplete: " + "; ".join(problems))
    _check_no_secrets(manifest["config"])


def _check_no_secrets(config: Any, where: str = "config") -> None:
    """Refuse a config dump in which a secret-looking key still holds a value."""
    if isinstance(config, Mapping):
        for key, value in config.items():
            redacted_value = redacted({key: value})[key]
            if redacted_value == "***" and value != "***":
                raise InputError(
                    f"manifest {where}.{key} holds a secret; build it with build_manifest()"
                )
            _check_no_secrets(value, f"{where}.{key}")
    elif isinstance(config, list):
        for i, value in enumerate(config):
            _check_no_secrets(value, f"{where}[{i}]")


def describe_model(model: Mapping[str, Any] | None, quote: str = "") -> str:
    """One line naming what wrote the data (the manifest's ``model``: backend, model,
    revision, sampling) for the card and ``cseaug show``; ``quote`` goes around the name.

    Example:
        >>> describe_model({"llm": {"backend": "openai-compatible", "model": "m",
        ...     "served": {"id": "m", "root": "/ckpt/a"}, "sampling": {"temperature": 0.7, "seed": None}}})
        'm (backend openai-compatible; served root /ckpt/a; temperature=0.7)'
        >>> describe_model({"llm": {"backend": "openai", "model": "gpt-x"},
        ...     "answered_by": {"gpt-x-0125": 40}})
        'gpt-x (backend openai; answered by gpt-x-0125: 40 answers)'
    """
    if not model:
        return "-"
    llm = model.get("llm", model)
    if not isinstance(llm, Mapping) or "model" not in llm:
        return ", ".join(sorted(model))
    facts = [f"backend {llm.get('backend', '?')}"]
    if llm.get("revision"):
        facts.append(f"revision {llm['revision']}")
    served = llm.get("served") or {}
    facts += [f"served {k} {served[k]}" for k in ("revision", "root", "owned_by") if k in served]
    if llm.get("checkpoint"):
        facts.append(f"checkpoint {str(llm['checkpoint'])[:16]}")
    if answered := model.get("answered_by"):
        named = ", ".join(f"{quote}{name}{quote}: {n} answers" for name, n in answered.items())
        facts.append(f"answered by {named}")
    if settings := [f"{k}={v}" for k, v in (llm.get("sampling") or {}).items() if v is not None]:
        facts.append(", ".join(settings))
    return f"{quote}{llm['model']}{quote} ({'; '.join(facts)})"


def describe_usage(token_usage: Mapping[str, Any] | None) -> str:
    """One line of the manifest's ``token_usage`` (older manifests: one flat dict).

    Example:
        >>> describe_usage({"this_run": {"requests": 0, "cached": 9}, "build": {"answers": 9}})
        'this run: requests 0, cached 9; whole build: answers 9'
    """
    if not token_usage:
        return "-"

    def flat(part: Mapping[str, Any]) -> str:
        return ", ".join(f"{k} {v}" for k, v in part.items()) or "-"

    if "this_run" not in token_usage:
        return flat(token_usage)
    return f"this run: {flat(token_usage['this_run'])}; whole build: {flat(token_usage.get('build') or {})}"


def measured_share(gate: Mapping[str, Any]) -> str:
    """How many measured rows kept the order, what the pattern filter dropped, the share and
    its standard error, in words (the gate's message, the card and ``cseaug show``).

    Example:
        >>> measured_share({"ordered_rows": 3, "rows": 40, "sampled": False,
        ...     "filtered_rows": 2, "share": 0.0714, "standard_error": 0.0389})
        '3 of 40 generated rows and none of the 2 the pattern filter dropped (7.1% ± 3.9%)'
    """
    rows = "sampled rows" if gate.get("sampled") else "generated rows"
    dropped = gate.get("filtered_rows", 0)
    return (
        f"{gate['ordered_rows']:,} of {gate['rows']:,} {rows}"
        + (f" and none of the {dropped:,} the pattern filter dropped" if dropped else "")
        + f" ({gate['share']:.1%} ± {gate['standard_error']:.1%})"
    )


def describe_quality_gate(gate: Mapping[str, Any] | None) -> str:
    """One line of the manifest's ``quality_gate`` (:func:`cseaug.pipeline.gate.check_quality_gate`):
    what was checked and what share passed, or why nothing was.

    Example:
        >>> describe_quality_gate({"checked": True, "order": "positive > negative", "encoder": "m",
        ...     "rows": 40, "ordered_rows": 38, "share": 0.95, "standard_error": 0.0345,
        ...     "sampled": False, "mer_share": 0.6, "min_pattern_share": 0.7, "passed": True})
        'pattern order positive > negative in cosine similarity (m): 38 of 40 generated rows (95.0% ± 3.5%), MER order 60.0%; minimum 70%: passed'
        >>> describe_quality_gate(None)
        'not recorded (published before the quality gate)'
    """
    if not gate:
        return "not recorded (published before the quality gate)"
    if not gate.get("checked"):
        return f"not checked: {gate.get('reason', '-')}"
    if gate.get("share") is None:
        return f"pattern order {gate['order']}: no row with two ordered views, nothing to check"
    mer = gate.get("mer_share")
    minimum = gate["min_pattern_share"]
    return (
        f"pattern order {gate['order']} in cosine similarity ({gate['encoder']}): "
        + measured_share(gate)
        + ("" if mer is None else f", MER order {mer:.1%}")
        + f"; minimum {minimum:.0%}: "
        + ("gate off (publish.min_pattern_share 0)" if minimum == 0 else "passed")
    )
