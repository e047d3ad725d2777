"""``cseaug versions``, ``cseaug show`` and ``cseaug export``: list, describe and export versions.

Example:
    $ cseaug versions                      # every dataset under ./storage
    $ cseaug show wiki-sts                 # the latest version; wiki-sts/v0002 for another
    $ cseaug export wiki-sts --format ngcse --out wiki_sts.jsonl
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from cseaug.dataset import versions
from cseaug.dataset.export import default_export_path, export_version, normalize_format
from cseaug.errors import InputError

RootOption = Annotated[
    Path, typer.Option("--root", help="Output root holding datasets/ (output.root of the config).")
]
RefArgument = Annotated[
    str, typer.Argument(help="NAME, NAME/latest, NAME/vNNNN, or a version directory.")
]


class SplitChoice(str, Enum):
    train = "train"
    heldout = "heldout"
    all = "all"


class LayoutChoice(str, Enum):
    auto = "auto"
    pair = "pair"
    triplet = "triplet"
    quadruplet = "quadruplet"
    hybrid = "hybrid"


def _summary(manifest: dict[str, Any]) -> dict[str, Any]:
    counts = manifest.get("counts", {})
    return {
        "created": str(manifest.get("created_at", ""))[:19].replace("T", " "),
        "rows": counts.get("rows", 0),
        "aigen": counts.get("by_split", {}).get("aigen", 0),
        "rejects": counts.get("rejects", 0),
        "method": manifest.get("method", ""),
        "fingerprint": str(manifest.get("fingerprints", {}).get("build", ""))[:12],
    }


def versions_command(
    name: Annotated[
        str | None, typer.Argument(help="Only this dataset (default: every dataset).")
    ] = None,
    root: RootOption = Path("storage"),
) -> None:
    """List published dataset versions: name, version, created, rows, rejects, method, fingerprint."""
    names = [versions.check_name(name)] if name else versions.list_datasets(root)
    if name and not versions.list_versions(root, name):
        known = versions.list_datasets(root)
        raise InputError(
            f"no dataset '{name}' under {versions.datasets_dir(root)}; "
            + (f"datasets there: {', '.join(known)}" if known else "there are no datasets yet")
        )
    console = Console()
    if not names:
        console.print(f"no datasets under {versions.datasets_dir(root)}")
        return
    table = Table(
        "name", "version", "created (UTC)", "rows", "aigen", "rejects", "method", "fingerprint"
    )
    for dataset in names:
        latest = versions.latest_version(root, dataset)
        for version in versions.list_versions(root, dataset):
            info = _summary(versions.read_manifest(versions.dataset_dir(root, dataset) / version))
            table.add_row(
                dataset,
                version + (" (latest)" if version == latest else ""),
                info["created"],
                str(info["rows"]),
                str(info["aigen"]),
                str(info["rejects"]),
                info["method"],
                info["fingerprint"],
            )
    console.print(table)


def show_command(
    ref: RefArgument,
    root: RootOption = Path("storage"),
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole manifest.json instead.")
    ] = False,
) -> None:
    """Describe one version: manifest summary, counts, rejects by reason, files."""
    version_dir = versions.resolve(root, ref)
    manifest = versions.read_manifest(version_dir)
    console = Console()
    if as_json:
        console.print_json(json.dumps(manifest))
        return
    counts = manifest.get("counts", {})
    model = manifest.get("model") or {}
    code = manifest.get("code", {})
    console.print(f"[bold]{manifest.get('dataset')}/{manifest.get('version')}[/]  {version_dir}")
    for label, value in (
        ("description", manifest.get("description") or "-"),
        ("created", manifest.get("created_at")),
        ("method", manifest.get("method")),
        ("model", f"{model.get('model', '-')} ({model.get('backend', '-')})" if model else "-"),
        (
            "fingerprints",
            ", ".join(f"{k} {str(v)[:16]}" for k, v in manifest.get("fingerprints", {}).items()),
        ),
        (
            "code",
            f"cseaug {code.get('version')} git {str(code.get('git_commit'))[:12]} dirty={code.get('git_dirty')}",
        ),
        (
            "token usage",
            ", ".join(f"{k} {v}" for k, v in (manifest.get("token_usage") or {}).items()) or "-",
        ),
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
    files = Table("file", "rows", "sha256", title="files")
    for entry in manifest.get("files", []):
        files.add_row(entry["path"], str(entry["rows"]), entry["sha256"][:16])
    console.print(files)


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
            help="File (hybrid: directory) to write (default: "
            "<root>/exports/<name>/<version>/<format>[-<layout>]-<split>[-epoch<k>].<ext>)."
        ),
    ] = None,
    split: Annotated[
        SplitChoice, typer.Option(help="Rows not held out (train), held-out rows, or all.")
    ] = SplitChoice.train,
    layout: Annotated[
        LayoutChoice,
        typer.Option(
            help="SimCSE / sentence-transformers: pair, triplet (anchor, positive, negative), "
            "quadruplet (+ knowledge, SKICSE), hybrid (sentence-transformers: every row, a "
            "directory of two files), or auto."
        ),
    ] = LayoutChoice.auto,
    epoch: Annotated[
        int | None,
        typer.Option(
            min=0, help="Generate-CSE: the positive is the view of this epoch (augmentations)."
        ),
    ] = None,
    root: RootOption = Path("storage"),
) -> None:
    """Export a version for SimCSE (CSV), NGCSE (JSONL), sentence-transformers (Parquet) or as
    JSONL with every view."""
    fmt = normalize_format(fmt)  # either spelling, before any work
    version_dir = versions.resolve(root, ref)
    if out is None:
        manifest = versions.read_manifest(version_dir)
        out = default_export_path(
            root, manifest["dataset"], manifest["version"], fmt, split.value,
            layout.value, epoch,
        )  # fmt: skip
    result = export_version(
        version_dir, fmt, out, split=split.value, layout=layout.value, epoch=epoch
    )
    console = Console()
    console.print(
        f"wrote {result.rows} rows to {result.path} ({result.format}, {result.layout}"
        + ("" if epoch is None else f", epoch {epoch}")
        + f", columns {', '.join(result.columns)})"
    )
    for note in result.notes:
        console.print(f"  note: {note}")


def register(app: typer.Typer) -> None:
    """Add ``versions``, ``show`` and ``export`` to the ``cseaug`` app."""
    app.command("versions")(versions_command)
    app.command("show")(show_command)
    app.command("export")(export_command)
