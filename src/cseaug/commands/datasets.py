"""``cseaug versions``, ``show``, ``export``, ``verify`` and ``push``: list, describe, export,
check and share versions (docs/dataset-contract.md, docs/deployment.md, with examples)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.filesize import decimal
from rich.table import Table

from cseaug.commands.options import RootOption
from cseaug.config import ExportLayout
from cseaug.dataset import uncommitted, versions
from cseaug.errors import InputError
from cseaug.roots import default_work_dir, is_uri

app = typer.Typer()

RefArgument = Annotated[
    str, typer.Argument(help="NAME, NAME/latest, NAME/vNNNN, or a version directory.")
]


def report_console() -> Console:
    """Rich's console on a terminal; piped or redirected, one wider than any line or table
    (rich would wrap at 80 columns), so paths, sha256 and table rows stay whole for scripts
    and copying."""
    console = Console()
    return console if console.is_terminal else Console(width=100_000, soft_wrap=True)


def plain_console(stderr: bool = False) -> Console:
    """A console that prints text as it is: no markup, no highlighting, never wrapped."""
    return Console(stderr=stderr, markup=False, highlight=False, soft_wrap=True)


VERSION_COLUMNS = (
    "name",
    "version",
    "created (UTC)",
    "rows",
    "aigen",
    "rejects",
    "method",
    "fingerprint",
)


def _version_rows(root: str, names: list[str], warn: Console) -> list[tuple[str, ...]]:
    """The :data:`VERSION_COLUMNS` of each readable version; a stray or damaged entry is a
    warning line instead."""
    rows = []
    for dataset in names:
        latest = versions.latest_version(root, dataset)
        for stray in versions.stray_versions(root, dataset):
            warn.print(
                f"warning: {stray} is not a published version (no manifest.json, or a file "
                "or symlink): skipped",
            )
        for version in versions.list_versions(root, dataset):
            try:
                manifest = versions.read_stored_manifest(root, dataset, version)
            except InputError as exc:
                warn.print(f"warning: {exc}: skipped")
                continue
            counts = manifest.get("counts", {})
            rows.append(
                (
                    dataset,
                    version + (" (latest)" if version == latest else ""),
                    str(manifest.get("created_at", ""))[:19].replace("T", " "),
                    str(counts.get("rows", 0)),
                    str(counts.get("by_split", {}).get("aigen", 0)),
                    str(counts.get("rejects", 0)),
                    manifest.get("method", ""),
                    str(manifest.get("fingerprints", {}).get("build", ""))[:12],
                )
            )
    return rows


AGE_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|min|h|d)$")
AGE_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_age(text: str) -> timedelta:
    """``30m``, ``24h``, ``7d`` (also ``s``, ``min``) as a positive duration."""
    match = AGE_RE.match(text.strip())
    seconds = float(match.group(1)) * AGE_UNITS[match.group(2)] if match else 0
    if seconds <= 0:
        raise InputError(f"--older-than '{text}' is not a positive duration such as 30m, 24h or 7d")
    return timedelta(seconds=seconds)


def _describe(prefix: uncommitted.UncommittedPrefix) -> str:
    now = uncommitted.utc_now()
    return (
        f"{len(prefix.files)} files, {decimal(prefix.size)}; claimed "
        f"{uncommitted.describe_age(now - prefix.claimed_at)} ago, last written "
        f"{uncommitted.describe_age(now - prefix.last_write)} ago"
    )


def _require_dataset(
    root: str, name: str | None, found: list[uncommitted.UncommittedPrefix]
) -> None:
    """An InputError listing the datasets there when ``name`` has nothing under ``root``."""
    if name and not (
        found or versions.list_versions(root, name) or versions.stray_versions(root, name)
    ):
        raise versions.no_such_dataset(root, name)


def _prune_uncommitted(root: str, name: str | None, idle: timedelta, dry_run: bool) -> None:
    """Empty the uncommitted prefixes idle for ``idle`` (:mod:`cseaug.dataset.uncommitted`),
    printing each one removed or kept."""
    if not is_uri(root):
        raise InputError(
            f"--prune-uncommitted is for object-store roots (s3://...); {root} is a local "
            "directory, where the next build removes stale .staging-* directories itself"
        )
    found = uncommitted.find_uncommitted(root, name)
    _require_dataset(root, name, found)
    console = plain_console()
    if not found:
        console.print(f"no uncommitted version prefixes under {versions.datasets_location(root)}")
        return
    verb = "would remove" if dry_run else "removed"
    removed = kept = files = size = 0
    for prefix in found:
        problem = uncommitted.idle_problem(prefix, idle, uncommitted.utc_now())
        if not problem and not dry_run:
            problem = uncommitted.prune(root, prefix, idle, uncommitted.utc_now())
        if problem:
            kept += 1
            console.print(f"kept {prefix.url}: {problem}")
            continue
        removed, files, size = removed + 1, files + len(prefix.files), size + prefix.size
        console.print(f"{verb} {prefix.url}: {_describe(prefix)}")
    console.print(
        f"{verb} {removed} uncommitted prefixes ({files} files, {decimal(size)}), kept {kept}"
        + ("; nothing deleted (--dry-run)" if dry_run else "; their numbers stay taken"),
    )


@app.command("versions")
def versions_command(
    name: Annotated[
        str | None, typer.Argument(help="Only this dataset (default: every dataset).")
    ] = None,
    root: RootOption = "storage",
    prune_uncommitted: Annotated[
        bool,
        typer.Option(
            "--prune-uncommitted",
            help="Object stores: delete the uploaded files of uncommitted version prefixes (a "
            "build died after claiming its name) unwritten for --older-than, printing each. "
            "A committed version is never touched; the number is never reused.",
        ),
    ] = False,
    older_than: Annotated[
        str | None,
        typer.Option(
            help="With --prune-uncommitted: only prefixes whose newest object is older than "
            "this (30m, 24h, 7d; default 24h, so an upload in progress is left alone)."
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="With --prune-uncommitted: list what it would remove, delete nothing."
        ),
    ] = False,
) -> None:
    """List published dataset versions: name, version, created, rows, rejects, method, fingerprint.

    On a terminal it prints a table; piped or redirected, tab-separated lines with a header
    (nothing cut). Entries that are not versions, and on an object store version prefixes
    that were claimed but never committed, are warnings on stderr; --prune-uncommitted
    removes the abandoned ones instead of listing.
    """
    if name:
        versions.check_name(name)
    if prune_uncommitted:
        idle = uncommitted.DEFAULT_IDLE if older_than is None else parse_age(older_than)
        _prune_uncommitted(root, name, idle, dry_run)
        return
    if older_than is not None or dry_run:
        raise InputError("--older-than and --dry-run only go with --prune-uncommitted")
    found = uncommitted.find_uncommitted(root, name) if is_uri(root) else []
    _require_dataset(root, name, found)
    names = [name] if name else versions.list_datasets(root)
    warn = plain_console(stderr=True)
    for prefix in found:
        warn.print(
            f"warning: {prefix.url} is not committed (no manifest.json): {_describe(prefix)}; "
            "its build is still uploading or died (--prune-uncommitted removes it once "
            "unwritten for --older-than, 24h by default, and its build's lease has run out)",
        )
    console = Console()
    if not names:
        console.print(f"no datasets under {versions.datasets_location(root)}")
        return
    rows = _version_rows(root, names, warn)
    if not console.is_terminal:
        for row in [VERSION_COLUMNS, *rows]:
            typer.echo("\t".join(row))
        return
    table = Table(*VERSION_COLUMNS)
    for row in rows:
        table.add_row(*row)
    console.print(table)


@app.command("show")
def show_command(
    ref: RefArgument,
    root: RootOption = "storage",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole manifest.json instead.")
    ] = False,
) -> None:
    """Describe one version: manifest summary, counts, rejects by reason, files, and what
    other papers' trainers need to read its exports right."""
    from cseaug.dataset.export import trainer_notes
    from cseaug.dataset.manifest import describe_model, describe_quality_gate, describe_usage
    from cseaug.dataset.verify import verify_stored_version

    manifest = versions.read_manifest(versions.resolve(root, ref))
    console = report_console()
    if as_json:
        console.print_json(json.dumps(manifest))
        return
    counts = manifest.get("counts", {})
    model = manifest.get("model") or {}
    code = manifest.get("code", {})
    report = verify_stored_version(root, ref)
    console.print(
        f"[bold]{manifest.get('dataset')}/{manifest.get('version')}[/]  {report.version_dir}"
    )
    for label, value in (
        ("description", manifest.get("description") or "-"),
        ("created", manifest.get("created_at")),
        ("method", manifest.get("method")),
        ("model", describe_model(model)),
        (
            "fingerprints",
            ", ".join(f"{k} {str(v)[:16]}" for k, v in manifest.get("fingerprints", {}).items()),
        ),
        (
            "code",
            f"cseaug {code.get('version')} git {str(code.get('git_commit'))[:12]} dirty={code.get('git_dirty')}",
        ),
        ("token usage", describe_usage(manifest.get("token_usage"))),
        ("quality gate", describe_quality_gate(manifest.get("quality_gate"))),
    ):
        console.print(f"  {label:<13} {value}")
    console.print(
        f"  {'rows':<13} {counts.get('rows', 0)} (by split: {counts.get('by_split', {})}; "
        f"heldout {counts.get('heldout', 0)}; views: {counts.get('views', {})})"
    )
    console.print(f"  {'rejects':<13} {counts.get('rejects', 0)}")
    rejects = Table("stage", "reason", "rows", title="rejects by reason")
    for stage, reasons in counts.get("rejects_by_stage", {}).items():
        for reason, n in reasons.items():
            rejects.add_row(stage, reason, str(n))
    if rejects.row_count:
        console.print(rejects)
    state = dict.fromkeys(report.changed, "changed") | dict.fromkeys(report.missing, "missing")
    files = Table("file", "rows", "sha256", "check", title="files")
    for entry in manifest.get("files", []):
        rows = "-" if entry.get("rows") is None else str(entry["rows"])
        files.add_row(entry["path"], rows, entry["sha256"][:16], state.get(entry["path"], "ok"))
    listed = {entry["path"] for entry in manifest.get("files", [])}
    # recorded exports beside the version, and files no record lists
    for path, problem in (state | dict.fromkeys(report.unlisted, "not listed")).items():
        if path not in listed:
            files.add_row(path, "-", "-", problem)
    console.print(files)
    for note in trainer_notes(counts.get("views", {})):
        console.print(f"  note: {note}", markup=False)
    report.raise_if_wrong()


@app.command("export")
def export_command(
    ref: RefArgument,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="Trainer the file is for: simcse, ngcse, sentence-transformers (also spelled "
            "sentence_transformers, as in configs) or jsonl.",
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Local file (hybrid: directory) to write (default: "
            "<root>/exports/<name>/<version>/<format>[-<layout>]-<split>[-epoch<k>].<ext>; "
            "on an object store written in the work directory and uploaded there)."
        ),
    ] = None,
    split: Annotated[
        Literal["train", "heldout", "all"],
        typer.Option(help="Rows not held out (train), held-out rows, or all."),
    ] = "train",
    layout: Annotated[
        ExportLayout,
        typer.Option(
            help="SimCSE / sentence-transformers: pair, triplet (anchor, positive, negative), "
            "quadruplet (+ knowledge, SKICSE), hybrid (sentence-transformers: every row, a "
            "directory of two files), or auto."
        ),
    ] = "auto",
    epoch: Annotated[
        int | None,
        typer.Option(
            min=0, help="Generate-CSE: the positive is the view of this epoch (augmentations)."
        ),
    ] = None,
    root: RootOption = "storage",
) -> None:
    """Export a version for SimCSE (CSV), NGCSE (JSONL), sentence-transformers (Parquet) or as
    JSONL with every view."""
    from cseaug.dataset.commit_remote import upload_exports
    from cseaug.dataset.export import default_export_path, export_version, normalize_format
    from cseaug.dataset.protect import refuse_dataset_path

    fmt = normalize_format(fmt)  # either spelling, before any work
    version_dir = versions.resolve(root, ref)
    upload = out is None and is_uri(root)
    if out is None:
        manifest = versions.read_manifest(version_dir)
        out = default_export_path(
            default_work_dir(root), manifest["dataset"], manifest["version"], fmt,
            split, layout, epoch,
        )  # fmt: skip
    refuse_dataset_path(out, root, "--out")
    result = export_version(version_dir, fmt, out, split=split, layout=layout, epoch=epoch)
    written = str(result.path)
    if upload:
        uploaded = upload_exports(root, version_dir)
        written = next(u for u in uploaded if u.endswith("/" + result.path.name))
    console = report_console()
    console.print(
        f"wrote {result.rows} rows to {written} ({result.format}, {result.layout}"
        + ("" if epoch is None else f", epoch {epoch}")
        + f", columns {', '.join(result.columns)})"
    )
    for note in result.notes:
        console.print(f"  note: {note}")


@app.command("verify")
def verify_command(ref: RefArgument, root: RootOption = "storage") -> None:
    """Check every file of a version against the sha256 its manifest records, and find files
    the manifest does not list; exit 2 naming each wrong file. On an object store each
    object is hashed as it streams."""
    from cseaug.dataset.verify import verify_stored_version

    report = verify_stored_version(root, ref)
    report.raise_if_wrong()
    report_console().print(
        f"ok: {report.version_dir}: {report.summary()}", markup=False, highlight=False
    )


@app.command("push")
def push_command(
    ref: RefArgument,
    repo: Annotated[
        str | None,
        typer.Option(help="Hugging Face dataset repository, owner/name (created if missing)."),
    ] = None,
    private: Annotated[
        bool, typer.Option("--private", help="Create the repository private.")
    ] = False,
    revision: Annotated[
        str | None, typer.Option(help="Branch to commit to (default main; created if missing).")
    ] = None,
    local_dir: Annotated[
        Path | None,
        typer.Option(
            help="Write the folder the push would upload into this new or empty directory; "
            "no network."
        ),
    ] = None,
    root: RootOption = "storage",
) -> None:
    """Upload a version to the Hugging Face Hub in one commit tagged with its version name:
    data with train and heldout splits, the card as README.md, manifest, rejects, diagnostics.
    The token is huggingface_hub's: HF_TOKEN or `hf auth login`."""
    from cseaug.dataset.hub_push import push_version, write_local_dir
    from cseaug.dataset.protect import refuse_dataset_path

    version_dir = versions.resolve(root, ref)
    console = plain_console()
    if local_dir is not None:
        refuse_dataset_path(local_dir, root, "--local-dir")
        count = write_local_dir(version_dir, local_dir)
        console.print(f"wrote {count} files to {local_dir}: what a push of {ref} uploads")
        return
    if repo is None:
        raise InputError("cseaug push needs --repo owner/name (or --local-dir DIR)")
    result = push_version(version_dir, repo, private=private, revision=revision)
    where = f"{result.repo} tag {result.tag} (commit {result.commit[:12]})"
    if result.pushed:
        console.print(f"pushed {result.files} files to {where}")
    else:
        console.print(f"unchanged: {where} already holds these {result.files} files; nothing sent")
