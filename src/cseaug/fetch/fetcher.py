"""Fetch catalogue entries into a data directory (``cseaug data fetch``): skip what is present
and verified, download the rest into ``.part`` files, check, place and record each
(docs/data.md, "What a fetch does").
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from rich.filesize import decimal

from cseaug.dataset.versions import acquire
from cseaug.errors import DownloadError
from cseaug.fetch.archive import extract_members, place
from cseaug.fetch.catalog import MIRROR_ENV, Entry, source_urls
from cseaug.fetch.download import Downloaded, RetryPolicy, UnreachableError, download
from cseaug.fetch.records import RECORDS_FILE, read_records, write_record
from cseaug.hashing import file_sha256

DOWNLOADS_DIR = ".downloads"

LOCK_FILE = ".fetch.lock"

Action = Literal["present", "downloaded", "failed"]


class OfflineError(DownloadError):
    """The first download could not connect anywhere; the message says what to do offline."""


@dataclass(frozen=True)
class Outcome:
    """What happened to one entry, a line for people (``detail``), the bytes downloaded."""

    entry: Entry
    action: Action
    detail: str
    size: int = 0


@dataclass
class FetchReport:
    """The outcome of every entry of one fetch, and how long it took."""

    data_dir: Path
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, action: Action) -> int:
        """How many entries ended with ``action``."""
        return sum(outcome.action == action for outcome in self.outcomes)

    @property
    def failures(self) -> list[Outcome]:
        """The entries that failed, each with its reason in ``detail``."""
        return [outcome for outcome in self.outcomes if outcome.action == "failed"]

    def summary(self) -> str:
        """One line: downloaded (with size), already present, failed, where, how long."""
        size = sum(outcome.size for outcome in self.outcomes)
        return (
            f"{self.count('downloaded')} downloaded ({decimal(size)}), "
            f"{self.count('present')} already present, {self.count('failed')} failed, "
            f"into {self.data_dir} in {self.seconds:.1f} s"
        )


def fetch(
    entries: Sequence[Entry],
    data_dir: Path,
    *,
    mirror: str | None = None,
    force: bool = False,
    policy: RetryPolicy | None = None,
    environ: Mapping[str, str] = os.environ,
    on_outcome: Callable[[Outcome], None] = lambda outcome: None,
) -> FetchReport:
    """Make every entry present and verified under ``data_dir``, calling ``on_outcome`` after
    each (``force``: download again what is present). A failing entry does not stop the
    others, except when the first download cannot connect at all (:class:`OfflineError`);
    a DownloadError when another fetch writes to ``data_dir``.
    """
    started = time.perf_counter()
    report = FetchReport(data_dir)
    connected = False
    with _exclusive(data_dir):
        for index, entry in enumerate(entries):
            try:
                outcome = _fetch_entry(
                    entry, data_dir, source_urls(entry, mirror, environ), force, policy
                )
                connected = connected or outcome.action == "downloaded"
            except UnreachableError as exc:
                if not connected:  # the entries before were present: list the others
                    raise OfflineError(offline_help(exc, entries[index:], data_dir)) from exc
                outcome = Outcome(entry, "failed", str(exc))
            except DownloadError as exc:
                connected = True
                outcome = Outcome(entry, "failed", str(exc))
            report.outcomes.append(outcome)
            on_outcome(outcome)
    report.seconds = time.perf_counter() - started
    return report


def presence(entry: Entry, data_dir: Path) -> str:
    """Whether ``entry``'s files are under ``data_dir``, by name and size (no hashing)."""
    paths = [data_dir / target for target in entry.targets]
    found = [path for path in paths if path.is_file()]
    if len(found) == len(paths):
        return f"present ({decimal(sum(path.stat().st_size for path in found))})"
    part = None if entry.is_folder else _part_path(entry, data_dir)
    if part is not None and part.is_file():
        return f"missing ({decimal(part.stat().st_size)} downloaded, resumable)"
    if found:
        return f"partial ({len(found)} of {len(paths)} files)"
    return "missing"


def offline_help(error: UnreachableError, entries: Sequence[Entry], data_dir: Path) -> str:
    """The message of :class:`OfflineError`: what failed, and three ways on without the internet."""
    places: list[tuple[str, str]] = []
    for entry in entries:
        files = entry.members + entry.files
        folders = sorted({Path(m.target).parent for m in files})
        shown = [f"{data_dir / f}/ ({len(files)} files)" for f in folders]
        places += [(path, entry.name) for path in shown or [str(data_dir / (entry.target or ""))]]
    width = max(len(path) for path, _ in places)
    files = ", ".join(entry.filename for entry in entries)
    return "\n".join(
        [
            f"{error}.",
            "This machine looks offline; nothing was downloaded. Without the internet:",
            "  - copy the files from a machine that has them (e.g. its data folder after "
            f"`cseaug data fetch`, with {RECORDS_FILE}) to",
            *(f"      {path:<{width}}  {name}" for path, name in places),
            "    then run `cseaug data fetch` again: it checks them against the published sha256",
            "  - or point a config at local copies, e.g. --set corpus.path=/path/to/"
            "wiki1m_for_simcse.txt or --set patterns.path=/path/to/sts12_train "
            "(docs/data.md names the key for each file)",
            "  - or fetch from a mirror: HF_ENDPOINT=<hub mirror> for the Hugging Face files, or "
            f"--mirror URL (or {MIRROR_ENV}) for an HTTP server or a file:// folder holding {files}",
        ]
    )


def _fetch_entry(
    entry: Entry, data_dir: Path, urls: Sequence[str], force: bool, policy: RetryPolicy | None
) -> Outcome:
    records = read_records(data_dir)
    if not force and (detail := _verified_presence(entry, data_dir, records)):
        return Outcome(entry, "present", detail)
    if not urls:  # every URL is on the hub and HF_HUB_OFFLINE is set
        reason = "HF_HUB_OFFLINE is set; unset it, or use --mirror"
        raise UnreachableError(entry.filename, f"the Hugging Face hub: {reason}")
    if entry.is_folder:
        return _fetch_files(entry, data_dir, urls, force, policy)
    part = _part_path(entry, data_dir)
    got = download(urls, part, label=entry.filename, policy=policy)
    expected, basis = _expected_sha256(entry, records)
    if expected is not None and got.sha256 != expected:
        raise _mismatch(entry, data_dir, part, _shown(entry, data_dir), got, expected, basis)
    if entry.is_archive:
        extract_members(part, entry.members, data_dir)
        part.unlink()
        with contextlib.suppress(OSError):  # other downloads may still be in there
            part.parent.rmdir()
    else:
        place(part, data_dir / entry.target)
    if expected is None:
        verdict = f"no published sha256: recorded {got.sha256} in {RECORDS_FILE} (first use)"
        _record(entry, data_dir, got.url, got.sha256, "first use")
    else:
        verdict = f"sha256 verified ({basis})"
        if entry.sha256:
            _record(entry, data_dir, got.url, got.sha256, "catalogue")
    resumed = f", resumed at {decimal(got.resumed_from)}" if got.resumed_from else ""
    return Outcome(
        entry,
        "downloaded",
        f"downloaded {decimal(got.size)} from {got.url}{resumed}; {verdict}",
        size=got.size,
    )


def _fetch_files(
    entry: Entry, data_dir: Path, bases: Sequence[str], force: bool, policy: RetryPolicy | None
) -> Outcome:
    """Download, verify and place each missing file (all with ``force``) of a folder entry."""
    count = size = 0
    source = ""
    for member in entry.files:
        target = data_dir / member.target
        if not force and target.is_file() and file_sha256(target) == member.sha256:
            continue
        part = target.with_name(target.name + ".part")
        urls = [f"{base}/{member.name}" for base in bases]
        got = download(urls, part, label=f"{entry.filename}/{member.name}", policy=policy)
        if got.sha256 != member.sha256:
            raise _mismatch(entry, data_dir, part, str(target), got, member.sha256, "catalogue")
        place(part, target)
        _write_record(data_dir, member.target, entry, got.url, "catalogue", got.sha256)
        count, size, source = count + 1, size + got.size, got.url.rsplit("/", 1)[0]
    return Outcome(
        entry,
        "downloaded",
        f"downloaded {count} of {len(entry.files)} files ({decimal(size)}) from {source}; "
        "sha256 of each verified (catalogue)",
        size=size,
    )


def _verified_presence(
    entry: Entry, data_dir: Path, records: Mapping[str, Mapping[str, str]]
) -> str | None:
    """A line saying the entry is present (verified, or why not); None when a file is missing,
    a DownloadError when a present file differs from its known sha256 (left alone)."""
    checks = [(m.target, m.sha256, "catalogue") for m in entry.members + entry.files] or [
        (entry.target or "", *_expected_sha256(entry, records))
    ]
    if not all((data_dir / target).is_file() for target, _, _ in checks):
        return None
    for target, expected, basis in checks:
        if expected is None:
            return (
                f"present, not verified: no published sha256 and no record in {RECORDS_FILE} "
                "(not fetched by cseaug); --force downloads it and records its sha256"
            )
        got = file_sha256(data_dir / target)
        if got != expected:
            raise DownloadError(
                f"{data_dir / target} exists but its sha256 is {got}, not {expected} "
                f"({basis}); move it away, or pass --force to replace it"
            )
    return f"already present, sha256 verified ({checks[0][2]})"


def _expected_sha256(
    entry: Entry, records: Mapping[str, Mapping[str, str]]
) -> tuple[str | None, str]:
    """The sha256 the download must have and where it comes from (the catalogue, or the
    first download's record); None when neither has one."""
    if entry.sha256:
        return entry.sha256, "catalogue"
    record = records.get(entry.target or "")
    if record and record.get("sha256"):
        when = str(record.get("fetched_at", "?"))[:10]
        return record["sha256"], f"recorded on first use, {when}, from {record.get('url')}"
    return None, "none published"


def _mismatch(
    entry: Entry, data_dir: Path, part: Path, shown: str, got: Downloaded, expected: str, basis: str
) -> DownloadError:
    """Delete the download ``part`` whose sha256 is not ``expected``; the error that says so."""
    part.unlink(missing_ok=True)
    if entry.sha256 or entry.is_folder:
        hint = (
            "The source served different bytes than the catalogue expects: try another "
            "mirror (--mirror) and report it."
        )
    else:
        hint = (
            f"The source now serves different bytes than the first fetch did; if the upstream "
            f"file changed on purpose, delete the '{entry.target}' record in "
            f"{data_dir / RECORDS_FILE} and fetch again."
        )
    return DownloadError(
        f"sha256 mismatch for {shown} ({got.url}): expected {expected} ({basis}), got "
        f"{got.sha256}; the download was deleted. {hint}"
    )


def _record(entry: Entry, data_dir: Path, url: str, sha256: str, checksum: str) -> None:
    """Record a plain file, or each member extracted from an archive whose sha256 is ``sha256``."""
    if not entry.is_archive:
        _write_record(data_dir, entry.target or "", entry, url, checksum, sha256)
    for member in entry.members:
        more = {"member": member.name, "archive_sha256": sha256}
        _write_record(data_dir, member.target, entry, url, checksum, member.sha256, **more)


def _write_record(
    data_dir: Path, target: str, entry: Entry, url: str, checksum: str, sha256: str, **more: str
) -> None:
    now = datetime.now(UTC).isoformat(timespec="seconds")
    record = {"entry": entry.name, "url": url, "checksum": checksum, "fetched_at": now}
    write_record(data_dir, target, {**record, "sha256": sha256, **more})


def _part_path(entry: Entry, data_dir: Path) -> Path:
    if entry.is_archive:
        return data_dir / DOWNLOADS_DIR / f"{entry.filename}.part"
    return data_dir / f"{entry.target}.part"


def _shown(entry: Entry, data_dir: Path) -> str:
    if entry.is_archive:
        return f"{entry.filename} (for {data_dir / Path(entry.members[0].target).parent})"
    return str(data_dir / (entry.target or ""))


@contextmanager
def _exclusive(data_dir: Path) -> Iterator[None]:
    """Hold ``<data_dir>/.fetch.lock``, and remove it afterwards (a fetch that locked the
    removed file locks the new one)."""
    path = data_dir / LOCK_FILE
    while (lock := acquire(path, blocking=False)) is not None and not _same_file(lock.fd, path):
        lock.release()  # removed by the fetch that held it: lock the new one
    if lock is None:
        raise DownloadError(
            f"another `cseaug data fetch` is writing to {data_dir}; wait for it to finish"
        )
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        lock.release()


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), path.stat())
    except FileNotFoundError:
        return False
