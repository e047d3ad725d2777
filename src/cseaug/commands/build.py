"""``cseaug build``: build and publish a dataset version from a YAML config (docs/prefect.md).

The build runs as the Prefect flow ``build-hybrid-dataset``, after the preflight
(:mod:`cseaug.pipeline.preflight`) has reported every problem at once. ``--dry-run`` runs
the checks a dry run needs, counts the requests and tokens the build would spend and
publishes nothing. A stopped build ends with one line saying what was kept for the rerun
(:mod:`cseaug.pipeline.resume`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from cseaug import wallclock
from cseaug.commands.quiet_logs import quiet_expected_tracebacks
from cseaug.commands.stopping import one_line_on_stop
from cseaug.config import RunConfig, load_config
from cseaug.errors import CseaugError, PublishGateError

if TYPE_CHECKING:
    from cseaug.pipeline.publish import BuildSummary
    from cseaug_prefect.flows.temporary_server import TemporaryServer

app = typer.Typer()


def console() -> Console:
    """The console of the command's messages, made where it prints: Rich fixes the width of a
    console made while ``COLUMNS`` is set, so one made at import kept that import's width."""
    return Console(stderr=True)


TIME_PARTS = {
    "startup": "start-up",
    "prefect_start": "Prefect start",
    "plan": "sampling",
    "generate": "generation",
    "publish": "publishing",
    "diagnostics": "diagnostics",
    "orchestration": "Prefect between tasks",
}
"""The summary's names of the parts of a build's wall time (``timings`` keys), in order."""


def time_parts(summary: BuildSummary, now: float) -> tuple[float, list[tuple[str, float]]]:
    """The build's wall time up to ``now`` and its parts, which add up to it: the build's
    ``timings``, the flow's end after publishing (Prefect's last tasks and states), and
    whatever else is left, named."""
    timings = summary.timings
    parts = [(label, timings[key]) for key, label in TIME_PARTS.items() if key in timings]
    seconds = summary.seconds
    if summary.finished_at:
        parts.append(("flow end", max(0.0, now - summary.finished_at)))
        seconds += parts[-1][1]
    rest = seconds - sum(part for _, part in parts)
    if rest >= 0.05:
        parts.append(("other", rest))
    return seconds, parts


def print_summary(summary: BuildSummary) -> None:
    """The end-of-build summary: rows, rejects by reason, tokens, the wall time from the
    command's start and its parts, output path (none for a build a gate refused)."""
    table = Table(title="build summary", show_header=False, title_justify="left")
    if summary.reused_version:
        console().print(summary.message, markup=False, highlight=False)
    version = summary.version_dir or "none: nothing published (the error below says why)"
    table.add_row("version", str(version))
    table.add_row("rows", f"{summary.rows:,} ({summary.aigen:,} aigen, {summary.other:,} other)")
    table.add_row("rejects", f"{summary.rejects:,}")
    for stage, reasons in summary.rejects_by_stage.items():
        for reason, count in reasons.items():
            table.add_row("", f"{stage}/{reason}: {count:,}")
    for label, usage in (("LLM", summary.token_usage), ("judge", summary.judge_usage)):
        if usage:
            table.add_row(
                label,
                f"{usage.get('requests', 0):,} requests sent, {usage.get('cached', 0):,} from cache, "
                f"{usage.get('prompt_tokens', 0):,} prompt + {usage.get('completion_tokens', 0):,} completion tokens",
            )
    seconds, parts = time_parts(summary, time.time())
    table.add_row("time", f"{seconds:.1f} s (wall)")
    if parts:
        table.add_row("", ", ".join(f"{part} {spent:.1f} s" for part, spent in parts))
    for path in summary.exports:
        table.add_row("export", path)
    console().print(table)


def print_estimate(estimate: dict[str, Any], build_needs: list[str]) -> None:
    """What a dry run found: requests and tokens the build would spend, and what a real
    build would still need (the preflight's problems a dry run does not stop on)."""
    table = Table(
        title="dry run: nothing sent, nothing published", show_header=False, title_justify="left"
    )
    for key, value in estimate.items():
        table.add_row(key.replace("_", " "), f"{value:,}" if isinstance(value, int) else str(value))
    console().print(table)
    if build_needs:
        lines = [" ".join(need.split()) for need in build_needs]  # one line each
        console().print(
            "a real build would still need:\n" + "\n".join(f"  - {line}" for line in lines),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


@app.command("build")
def build(
    config: Path = typer.Option(
        ..., "--config", "-c", help="YAML run config, e.g. configs/wiki-sts.yaml."
    ),
    set_: list[str] = typer.Option(
        [],
        "--set",
        "-s",
        help="Override a config value: key.path=value (repeatable), e.g. sample.size=500.",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Count requests and tokens the build would spend; send and publish nothing.",
    ),
    force_new_version: bool = typer.Option(
        False,
        "--force-new-version",
        help="Publish a new version even when the data equal the latest version's "
        "(output.force_new_version).",
    ),
) -> None:
    """Build a dataset version from a config (runs the Prefect flow build-hybrid-dataset)."""
    set_ = [*set_, "output.force_new_version=true"] if force_new_version else set_
    cfg = load_config(config, set_)  # the build's one validation: the flow is given cfg
    dry_run = dry_run or cfg.execution.dry_run
    with one_line_on_stop(lambda: None if dry_run else kept_for_rerun(cfg)):
        run_build_command(cfg, dry_run=dry_run)


def run_build_command(cfg: RunConfig, *, dry_run: bool) -> None:
    """The preflight, then the dry run's estimate or the build's flow (given the validated
    ``cfg`` and what the preflight's probes of the LLM endpoints reported) and its summary."""
    from cseaug.pipeline.preflight import check_before_build

    # every problem at once, in seconds, before any server or flow starts
    found = check_before_build(cfg, say=say, dry_run=dry_run)
    if dry_run:
        from cseaug.pipeline.dry_run import estimate_build

        print_estimate(estimate_build(cfg, found.served), found.build_needs)
        return
    clock = wallclock.Clock({wallclock.CLI_STARTED: wallclock.process_started()})
    with importing_the_flow(clock, start_server=cfg.execution.runner.kind == "local"):
        from cseaug_prefect.flows.build_hybrid_dataset import build_hybrid_dataset
    try:
        summary = build_hybrid_dataset(config=cfg, served=found.served, clock=clock)
    except PublishGateError as refused:
        if refused.summary is not None:
            print_summary(refused.summary)
        raise
    print_summary(summary)


@contextmanager
def importing_the_flow(clock: wallclock.Clock, start_server: bool = True) -> Iterator[None]:
    """Around a flow's import: Prefect's temporary server (:func:`temporary_server`) starts
    on the other core meanwhile, and is waited for after the hand-over's mark on the build's
    ``clock`` (counted in ``prefect_start``, as Prefect's own start was)."""
    server = temporary_server() if start_server else None
    yield
    quiet_expected_tracebacks()  # Prefect's console logging exists once the flow is imported
    clock.mark(wallclock.FLOW_CALLED)
    if server is not None:
        server.wait_until_ready()


def kept_for_rerun(cfg: RunConfig) -> str | None:
    """What a stopped build of ``cfg`` kept for its rerun (:mod:`cseaug.pipeline.resume`);
    None when its inputs cannot be read (the preflight said why)."""
    from cseaug.pipeline.resume import kept_for_rerun as kept

    try:
        return kept(cfg)
    except (CseaugError, OSError):
        return None


def say(note: str) -> None:
    """One ``note:`` line on the console."""
    console().print(f"note: {note}", highlight=False, soft_wrap=True)


def temporary_server() -> TemporaryServer | None:
    """Start Prefect's temporary server now when a flow would start one (no
    ``PREFECT_API_URL``: :mod:`cseaug_prefect.flows.temporary_server` says why by hand);
    None otherwise."""
    if os.environ.get("PREFECT_API_URL"):
        return None  # the normal set-up for repeated builds: nothing to start, nothing to import
    from cseaug_prefect.flows.temporary_server import TemporaryServer, wanted

    if not wanted():
        return None
    server = TemporaryServer()
    say(
        f"starting Prefect's temporary server on {server.api_url} for this run; "
        "a running server saves its start on every run (docs/prefect.md)"
    )
    return server
