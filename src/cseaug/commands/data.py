"""``cseaug data fetch``: download the public inputs the shipped configs read (docs/data.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.padding import Padding
from rich.table import Column, Table
from rich.text import Text

from cseaug.dataset.protect import refuse_dataset_path
from cseaug.errors import DownloadError
from cseaug.fetch.catalog import MIRROR_ENV, Entry, select

if TYPE_CHECKING:
    from cseaug.fetch.fetcher import Outcome

app = typer.Typer(
    name="data",
    help="The public input data the shipped configs read (SimCSE, STS12, SICK, MRPC) and the "
    "trainer's STS evaluation sets.",
    no_args_is_help=True,
)

_MARKS = {"downloaded": ("✓", "green"), "present": ("✓", "green"), "failed": ("✗", "red")}


@app.command("fetch")
def fetch_command(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Catalogue entries to fetch (default: all of them; see --list)."),
    ] = None,
    list_only: Annotated[
        bool,
        typer.Option(
            "--list", help="Show the catalogue (licences, checksums, present or missing) only."
        ),
    ] = False,
    data_dir: Annotated[
        Path, typer.Option("--dir", help="Target directory; the shipped configs read data/.")
    ] = Path("data"),
    force: Annotated[
        bool, typer.Option("--force", help="Download again what is already present.")
    ] = False,
    mirror: Annotated[
        str | None,
        typer.Option(
            envvar=MIRROR_ENV,
            help="Base URL (http(s):// or file://) serving the files by name; replaces every "
            "catalogue URL. HF_ENDPOINT alone redirects the Hugging Face hub files.",
        ),
    ] = None,
) -> None:
    """Download the inputs the shipped configs name into --dir: resumable, sha256-checked.

    Present and verified files are skipped; an interrupted download resumes. Files without
    a published sha256 (SimCSE's) get the sha256 of their first download recorded in
    <dir>/.fetched.json and are checked against it afterwards.
    """
    from cseaug.fetch.fetcher import fetch

    entries = select(names or [])
    refuse_dataset_path(data_dir, None, "--dir")
    console = Console(highlight=False)
    if list_only:
        _print_catalogue(console, entries, data_dir)
        return
    report = fetch(
        entries, data_dir, mirror=mirror, force=force, on_outcome=lambda o: _print(console, o)
    )
    console.print(f"data fetch: {report.summary()}", soft_wrap=True, markup=False)
    if report.failures:
        failed = ", ".join(outcome.entry.name for outcome in report.failures)
        raise DownloadError(
            f"{len(report.failures)} of {len(entries)} failed ({failed}); see above"
        )


def _print(console: Console, outcome: Outcome) -> None:
    mark, style = _MARKS[outcome.action]
    line = Text.assemble((f"{mark} {outcome.entry.name}", style), f": {outcome.detail}")
    console.print(line, soft_wrap=True)  # long URLs and sha256 stay whole for copying


def _print_catalogue(console: Console, entries: list[Entry], data_dir: Path) -> None:
    """One block per entry: name, status and files, then what it is, licence, checksum, users."""
    from cseaug.fetch.fetcher import presence

    console.print(f"catalogue of cseaug data fetch, target {data_dir} (details: docs/data.md)")
    for entry in entries:
        status = presence(entry, data_dir)
        present = status.startswith("present")
        files = entry.members + entry.files
        folders = sorted({str(data_dir / Path(m.target).parent) + "/" for m in files})
        heading = Text.assemble(
            (entry.name, "bold"),
            "  ",
            (status if present else f"{status}, {entry.size}", "green" if present else "yellow"),
            "  ",
            ", ".join(folders) or str(data_dir / (entry.target or "")),
        )
        details = Table.grid(Column(style="dim", no_wrap=True), Column(), padding=(0, 1))
        for label, value in (
            ("what", entry.description),
            ("licence", f"{entry.licence}; {entry.terms}"),
            ("sha256", _checksum_note(entry)),
            ("used by", ", ".join(c.removeprefix("configs/") for c in entry.configs)),
        ):
            details.add_row(label, Text(value))
        console.print()
        console.print(heading, soft_wrap=True)
        console.print(Padding(details, (0, 0, 0, 2)))


def _checksum_note(entry: Entry) -> str:
    from cseaug.fetch.records import RECORDS_FILE

    if entry.is_folder:
        return f"each of the {len(entry.files)} files checked against its own (catalogue)"
    if entry.sha256 is None:
        return f"none published: the first download's is recorded in {RECORDS_FILE} and enforced"
    if entry.is_archive:
        return f"{entry.sha256} (archive), and each of the {len(entry.members)} files extracted"
    return entry.sha256
