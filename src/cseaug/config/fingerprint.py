"""What of a config is recorded: its fingerprint (what changes the data) and its redacted
copy (docs/dataset-contract.md, the manifest)."""

from __future__ import annotations

from typing import Any

from cseaug.config.diagnostics import DiagnosticsConfig
from cseaug.config.run import PATTERN_METHODS, RunConfig
from cseaug.hashing import json_sha256
from cseaug.secrets import is_secret_name


def redacted(data: Any) -> Any:
    """A copy of a config dump with every value under a secret-looking key masked
    (:func:`cseaug.secrets.is_secret_name`: not ``api_key_env``, the name of a variable).

    Example:
        >>> redacted({"llm": {"api_key": "sk-1", "api_key_env": "OPENAI_API_KEY", "max_tokens": 9}})
        {'llm': {'api_key': '***', 'api_key_env': 'OPENAI_API_KEY', 'max_tokens': 9}}
    """
    if isinstance(data, dict):
        return {
            key: "***" if is_secret_name(str(key)) and value not in (None, "") else redacted(value)
            for key, value in data.items()
        }
    if isinstance(data, list):
        return [redacted(v) for v in data]
    return data


def measures_cs(cfg: RunConfig) -> bool:
    """Whether a build's CS step writes ``cs_<view>`` columns: for the diagnostics, the
    pattern filter (``cs``, ``both``), or the quality gate's pattern order (NGCSE with
    ``publish.min_pattern_share`` above 0: ``diagnostics.enabled: false`` turns off the
    diagnostics, never the gate)."""
    diagnostics = cfg.diagnostics
    gate = cfg.method in PATTERN_METHODS and cfg.publish.min_pattern_share > 0
    return diagnostics.enabled or diagnostics.pattern_filter in ("cs", "both") or gate


CS_KEYS = {"encoder", "encoder_revision", "pooling", "max_seq_length"}
"""The diagnostics settings that decide the ``cs_<view>`` values."""


def _data_changing_diagnostics(diag: DiagnosticsConfig, cs: bool) -> dict[str, Any]:
    """The diagnostics settings that filter rows or decide the ``cs_<view>`` columns (``cs``:
    the build measures them); reports alone do not change the data."""
    keys = set()
    if diag.remove_contaminated:
        keys |= {"eval_data_dir", "contamination_fields"}
    if diag.pattern_filter != "off":
        keys.add("pattern_filter")
    if cs:
        keys |= CS_KEYS | (
            {"cs_sample", "seed"} if diag.pattern_filter in ("off", "mer") else set()
        )
    return diag.model_dump(mode="json", include=keys)


LLM_TIMING = {
    "vllm",
    "circuit_breaker",
    "batch",
    "price",
    "failover",
    "rate_limit_budget_s",
    "threads",
}
"""The keys of an ``llm`` section that decide how fast or when, not what is asked."""


def config_fingerprint(cfg: RunConfig) -> str:
    """sha256 of everything in the config that changes the data: not ``execution``, ``publish``,
    where and what is exported, nor the :data:`LLM_TIMING` keys of ``llm`` and
    ``quality.judge.llm``; a config without a judge (or settings added since) has the
    fingerprint it had before they existed."""
    data = cfg.model_dump(
        mode="json",
        exclude={
            "execution": True,
            "publish": True,
            "llm": LLM_TIMING,
            "quality": {"judge": {"llm": LLM_TIMING}},
            "output": {"root", "exports", "force_new_version"},
        },
    )
    if data["quality"]["judge"] is None:  # no judge: the fingerprint of a build without one
        del data["quality"]["judge"]
    if (data["patterns"] or {}).get("intermediate_order") == "file":  # as before the setting
        del data["patterns"]["intermediate_order"]
    # the share actually held out, so an unset fraction and its explicit default agree
    data["output"]["heldout_fraction"] = cfg.heldout_fraction
    data["diagnostics"] = _data_changing_diagnostics(cfg.diagnostics, measures_cs(cfg))
    return json_sha256(data, ascii_only=True)
