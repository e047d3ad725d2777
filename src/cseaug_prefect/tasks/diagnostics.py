"""The Prefect task of the diagnostics: show a version's ``diagnostics/`` as a markdown artifact.

A thin wrapper over :mod:`cseaug.diagnostics.version`: the build writes the files before it
publishes (:mod:`cseaug.pipeline.publish`), and the flow shows them with this task. The artifact
inlines the PNGs as base64 data URIs, which the Prefect UI renders in markdown artifacts, so
the plots are visible on the flow run without access to the output directory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from prefect import task
from prefect.artifacts import create_markdown_artifact

from cseaug.diagnostics.version import DiagnosticsSummary
from cseaug.secrets import scrub


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key (lower-case letters, digits, dashes) from e.g. kind, dataset and
    version.

    Example:
        >>> artifact_key("diagnostics", "Wiki.STS", "v0003")
        'diagnostics-wiki-sts-v0003'
    """
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


@task(name="diagnostics-artifact")
def diagnostics_artifact_task(
    diagnostics_dir: str, key: str | None = None, title: str | None = None
) -> dict[str, Any]:
    """Publish written diagnostics (e.g. ``<version>/diagnostics``) as a markdown artifact.

    Returns:
        ``out_dir``, ``plots`` (paths relative to the version, for the card), the
        ``summary`` path and the row count; never the data.
    """
    summary = DiagnosticsSummary.load(Path(diagnostics_dir))
    # Artifacts live in Prefect's database: scrubbed like every other text that leaves.
    create_markdown_artifact(
        markdown=scrub(summary.artifact_markdown()),
        key=key,
        description=scrub(f"MER / CS diagnostics of {title or diagnostics_dir}"),
    )
    return {
        "out_dir": str(summary.out_dir),
        "plots": summary.plot_paths(),
        "summary": str(summary.summary_path),
        "rows": summary.summary["rows"],
    }
