"""Prefect tasks of the diagnostics: write ``diagnostics/`` and show it as a markdown artifact.

Thin wrappers over :mod:`cseaug.diagnostics.version`. The artifact inlines the PNGs as
base64 data URIs, which the Prefect UI renders in markdown artifacts, so the plots are
visible on the flow run without access to the output directory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact

from cseaug.config import DiagnosticsConfig
from cseaug.diagnostics.version import DiagnosticsSummary, write_diagnostics
from cseaug.secrets import scrub


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key (lower-case letters, digits, dashes) from e.g. dataset and version.

    Example:
        >>> artifact_key("Wiki.STS", "v0003")
        'diagnostics-wiki-sts-v0003'
    """
    slug = re.sub(r"[^a-z0-9]+", "-", "-".join(("diagnostics", *parts)).lower())
    return slug.strip("-")


def _publish(
    summary: DiagnosticsSummary, key: str | None, description: str | None
) -> dict[str, Any]:
    # Artifacts live in Prefect's database: scrubbed like every other text that leaves.
    create_markdown_artifact(
        markdown=scrub(summary.artifact_markdown()),
        key=key,
        description=scrub(description) if description else None,
    )
    return {
        "out_dir": str(summary.out_dir),
        "plots": summary.plot_paths(),
        "summary": str(summary.summary_path),
        "rows": summary.summary["rows"],
    }


@task(name="write-diagnostics")
def write_diagnostics_task(
    rows_dir: str,
    out_dir: str,
    cfg: DiagnosticsConfig | dict[str, Any] | None = None,
    cache_dir: str | None = None,
    title: str | None = None,
    key: str | None = None,
) -> dict[str, Any]:
    """Write ``diagnostics/`` for the rows of ``rows_dir`` and publish them as a markdown artifact.

    Returns:
        ``out_dir``, ``plots`` (paths relative to the version, for the card), the
        ``summary`` path and the row count; never the data.
    """
    settings = (
        cfg if isinstance(cfg, DiagnosticsConfig) else DiagnosticsConfig.model_validate(cfg or {})
    )
    summary = write_diagnostics(rows_dir, out_dir, settings, cache_dir=cache_dir, title=title)
    get_run_logger().info("diagnostics of %s written to %s", rows_dir, out_dir)
    return _publish(summary, key, f"MER / CS diagnostics of {title or rows_dir}")


@task(name="diagnostics-artifact")
def diagnostics_artifact_task(
    diagnostics_dir: str, key: str | None = None, title: str | None = None
) -> dict[str, Any]:
    """Publish already written diagnostics (e.g. ``<version>/diagnostics``) as a markdown artifact."""
    summary = DiagnosticsSummary.load(Path(diagnostics_dir))
    return _publish(summary, key, f"MER / CS diagnostics of {title or diagnostics_dir}")
