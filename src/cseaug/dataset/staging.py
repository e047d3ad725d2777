"""Publishing a dataset version atomically: stage in a hidden directory, validate, make
read-only, rename under the dataset's ``flock`` (on an object store: claim, upload, manifest
last, :mod:`cseaug.dataset.commit_remote`). The steps and what a failure at each leaves:
docs/dataset-contract.md, "Writing and publishing".
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cseaug.dataset import versions
from cseaug.dataset.atomic import atomic_path, fsync_path, write_text_atomic
from cseaug.dataset.card import render_card
from cseaug.dataset.commit_remote import claim_token, claim_version, upload_version
from cseaug.dataset.conform import conform, open_checked
from cseaug.dataset.counts import RowCounts
from cseaug.dataset.manifest import validate_manifest
from cseaug.dataset.schema import CANONICAL_SCHEMA, REJECTS_SCHEMA
from cseaug.dataset.sink import ROW_GROUP_ROWS, ParquetSink
from cseaug.dataset.store import Store
from cseaug.dataset.verify import FILES_COMPLETE, data_fingerprint
from cseaug.errors import InputError, os_error_message
from cseaug.hashing import file_sha256
from cseaug.progress import progress_bar
from cseaug.roots import is_uri, work_dir

IMAGE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg")
CARD_FILE = "README.md"
READ_ONLY_FILE = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
READ_ONLY_DIR = READ_ONLY_FILE | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH

Batches = Iterable[pa.Table | pa.RecordBatch]
HELDOUT_INDEX = CANONICAL_SCHEMA.get_field_index("heldout")


def heldout_flags(ids: pa.Array | pa.ChunkedArray, fraction: float) -> pa.Array:
    """The held-out flag of each id: the first 8 bytes of sha256(id), big-endian, below
    ``fraction * 2**64`` (NGCSE appendix, "Training Details"), the same in every version.

    Example:
        >>> heldout_flags(pa.array(["a", "b"]), 0.0).to_pylist()
        [False, False]
    """
    if not 0 <= fraction < 1:
        raise InputError(f"heldout fraction must be in [0, 1), got {fraction}")
    if fraction == 0 or len(ids) == 0:
        return pa.array(np.zeros(len(ids), dtype=bool))
    digests = b"".join(hashlib.sha256(i.encode()).digest()[:8] for i in ids.to_pylist())
    keys = np.frombuffer(digests, dtype=">u8")
    return pa.array(keys < np.uint64(int(fraction * 2**64)))


@dataclass
class PublishedVersion:
    """A version after publishing: its directory (a local copy for an object store), its
    ``location`` (the directory or URI), and ``reused``: an existing version held the data."""

    name: str
    version: str
    path: Path
    manifest: dict[str, Any]
    location: str
    reused: bool = False


def _seal_tree(top: Path) -> None:
    """chmod every file 0444 and every sub-directory 0555 below ``top`` (not ``top`` itself),
    and fsync them all, ``top`` included."""
    for dirpath, dirnames, filenames in os.walk(top, topdown=False):
        folder = Path(dirpath)
        for names, mode in ((filenames, READ_ONLY_FILE), (dirnames, READ_ONLY_DIR)):
            for name in names:
                if not (folder / name).is_symlink():  # chmod would change the link's target
                    os.chmod(folder / name, mode)
        for name in filenames:
            fsync_path(folder / name)
        fsync_path(folder)


def _force_rmtree(path: Path) -> None:
    """Remove a tree even where publishing made parts of it read-only; a symlink is removed
    as a link (``os.walk`` and ``shutil.rmtree`` never descend into one)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        for dirpath, _, _ in os.walk(path):
            os.chmod(dirpath, stat.S_IRWXU)  # the entries of a read-only directory stay put
        shutil.rmtree(path)


def remove_stale_staging(dataset_dir: Path) -> None:
    """Delete the staging directories and lock files of builds that are gone (their
    ``.staging-<uuid>.lock`` is free: a crashed build). A symlink among them is removed as a
    link: nothing it points at is opened, changed or deleted."""
    for entry in sorted(dataset_dir.iterdir()) if dataset_dir.is_dir() else []:
        if not entry.name.startswith(versions.STAGING_PREFIX) or not os.path.lexists(entry):
            continue  # not staging, or a lock file removed with its directory below
        if entry.is_symlink():
            entry.unlink()
            continue
        is_lock = entry.name.endswith(".lock")
        if is_lock and entry.with_suffix("").exists():
            continue  # removed with its directory, when that is stale
        lock_path = entry if is_lock else entry.with_name(entry.name + ".lock")
        if lock_path.is_symlink():
            lock_path.unlink()  # before acquire() would create the file it points at
        lock = versions.acquire(lock_path, blocking=False)
        if lock is None:
            continue  # a build is writing it right now
        try:
            if not is_lock:
                _force_rmtree(entry)
        finally:
            lock.release()
            lock_path.unlink(missing_ok=True)


class StagedVersion:
    """A version being written in a hidden staging directory under ``root`` (a URI root's
    in ``local_dir``, ``execution.work_dir``); :meth:`commit` publishes it, and leaving the
    ``with`` block without committing deletes it (the steps in order: :func:`publish_version`).
    """

    def __init__(
        self,
        root: str | Path,
        name: str,
        *,
        heldout_fraction: float = 0.1,
        rows_per_file: int = 200_000,
        local_dir: str | Path | None = None,
    ) -> None:
        self.root: str | Path = str(root) if is_uri(root) else Path(root)
        self.name = versions.check_name(name)
        self.heldout_fraction = heldout_fraction
        self.store = Store.from_root(root) if is_uri(root) else None
        staging_root = work_dir(root, local_dir) if self.store else self.root
        self.dataset_dir = versions.dataset_dir(staging_root, name)
        self.dataset_dir.mkdir(parents=True, exist_ok=True)
        token = f"{versions.STAGING_PREFIX}{uuid.uuid4().hex}"
        # Lock first, directory second: a cleaner that sees the directory finds the lock held.
        self._lock = versions.acquire(self.dataset_dir / f"{token}.lock")
        self.path = self.dataset_dir / token
        self.path.mkdir()
        (self.path / "data").mkdir()
        self._sink = ParquetSink(self.path / "data", CANONICAL_SCHEMA, rows_per_file)
        self._heldout_sink = ParquetSink(
            self.path / "data", CANONICAL_SCHEMA, rows_per_file, split="heldout"
        )
        self.counts = RowCounts()
        self._rejects_written = False
        self._sealed = False
        self._committed = False

    def __enter__(self) -> StagedVersion:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self._committed:
            self.abort()

    def write_rows(self, rows: Batches) -> int:
        """Stream canonical rows into the data files (conformed, ``heldout`` set, counted);
        may be called several times. Returns the number of rows this call wrote."""
        self._check_open()
        before = self.counts.rows
        with progress_bar(f"Writing {self.name} rows", total=None, unit="rows") as bar:
            for piece in rows:
                table = conform(piece, CANONICAL_SCHEMA, f"rows of {self.name}")
                flags = heldout_flags(table.column("id"), self.heldout_fraction)
                table = table.set_column(HELDOUT_INDEX, CANONICAL_SCHEMA.field("heldout"), flags)
                self.counts.add_rows(table)
                self._sink.write(table.filter(pc.invert(flags)))
                self._heldout_sink.write(table.filter(flags))
                bar.advance(table.num_rows)
        return self.counts.rows - before

    def write_rejects(self, rejects: Batches) -> int:
        """Stream every reject row into ``rejects.parquet`` (call once); returns the count."""
        self._check_open()
        if self._rejects_written:
            raise InputError(
                "rejects of this version were already written: pass them all in one call"
            )
        self._rejects_written = True
        with (
            pq.ParquetWriter(self.path / "rejects.parquet", REJECTS_SCHEMA) as writer,
            progress_bar(f"Writing {self.name} rejects", total=None, unit="rows") as bar,
        ):
            for piece in rejects:
                table = conform(piece, REJECTS_SCHEMA, f"rejects of {self.name}")
                if table.num_rows:
                    writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
                    self.counts.add_rejects(table)
                    bar.advance(table.num_rows)
        return self.counts.rejects  # the only call that counts rejects

    def seal(self) -> list[Path]:
        """Finish and return the data files; no rows after this, but files (diagnostics) may
        be added under :attr:`path` before :meth:`commit`."""
        if not self._sealed:
            self._check_open()
            held = self._heldout_sink.finish(empty_file=False)
            self._sink.finish(empty_file=not held)  # an empty file is one `datasets` cannot read
            if not self._rejects_written:
                self.write_rejects([])
            self._sealed = True
        return self.data_files()

    def data_files(self) -> list[Path]:
        """The sealed data files, in order (by name, as the data fingerprint takes them)."""
        return sorted((self.path / "data").glob("*.parquet"))

    def same_data_as_latest(self) -> PublishedVersion | None:
        """The latest version if it holds the sealed data, else None; a local version newer
        than ``latest`` (a publish killed before the pointer moved) is tried first and, when
        it holds them, ``latest`` is pointed at it."""
        latest = versions.latest_version(self.root, self.name)
        if latest is None:
            return None
        listed = versions.list_versions(self.root, self.name)
        fingerprint = data_fingerprint([self._file_entry(p) for p in self.data_files()])
        for version in reversed(listed[listed.index(latest) :]):  # the cut-off ones, then latest
            try:
                manifest = versions.read_stored_manifest(self.root, self.name, version)
            except InputError:
                continue  # a damaged version is no reason to withhold a good one
            if manifest.get("fingerprints", {}).get("data") != fingerprint:
                continue
            if version != latest:
                with versions.locked(self.dataset_dir / versions.LOCK_FILE):
                    write_text_atomic(self.dataset_dir / versions.LATEST_FILE, version + "\n")
            directory = versions.resolve(self.root, f"{self.name}/{version}")
            prefix = f"datasets/{self.name}/{version}"
            location = self.store.url(prefix) if self.store else str(Path(self.root, prefix))
            return PublishedVersion(self.name, version, directory, manifest, location, reused=True)
        return None

    def validate(self) -> None:
        """Check the staged files against the contract and the counts (raises InputError)."""
        files = self.data_files()
        found = sum(open_checked(p, CANONICAL_SCHEMA, "canonical").metadata.num_rows for p in files)
        if found != self.counts.rows:
            raise InputError(f"data files hold {found} rows but {self.counts.rows} were written")
        rejects_file = open_checked(self.path / "rejects.parquet", REJECTS_SCHEMA, "rejects")
        rejects = rejects_file.metadata.num_rows
        if rejects != self.counts.rejects:
            raise InputError(
                f"rejects.parquet holds {rejects} rows but {self.counts.rejects} were written"
            )
        if found:
            paths = [str(p) for p in files]
            ids = pq.read_table(paths, columns=["id"], partitioning=None).column("id")
            distinct = pc.count_distinct(ids).as_py()
            if distinct != found:
                raise InputError(
                    f"{found - distinct} duplicate id(s) among the rows of {self.name}: every anchor must appear once"
                )

    def commit(self, manifest: Mapping[str, Any]) -> PublishedVersion:
        """Validate, complete ``manifest`` (:func:`~cseaug.dataset.manifest.build_manifest`),
        write it and ``README.md``, and publish as the next version (InputError when invalid)."""
        self.seal()
        self.validate()
        extras = sorted(p for p in (self.path / "diagnostics").rglob("*") if p.is_file())
        files = [
            self._file_entry(p)
            for p in [*self.data_files(), self.path / "rejects.parquet", *extras]
        ]
        final = dict(manifest)
        final["fingerprints"] = {**final.get("fingerprints", {}), "data": data_fingerprint(files)}
        final["counts"] = self.counts.as_dict()
        final["heldout_fraction"] = self.heldout_fraction
        final["files"] = files
        final[FILES_COMPLETE] = True
        final["dataset"] = self.name
        if self.store is not None:
            return self._commit_remote(self.store, final, files)
        directory = self.dataset_dir
        with versions.locked(directory / versions.LOCK_FILE):
            remove_stale_staging(directory)
            version = versions.next_version(directory)
            target = directory / version
            if target.exists():
                raise InputError(
                    f"version {self.name}/{version} exists already; published versions are never rewritten"
                )
            self._write_card_and_manifest(final, files, version)
            self._rename_into_place(directory, target)
        self._committed = True
        self._release()
        return PublishedVersion(self.name, version, target, final, str(target))

    def _write_card_and_manifest(
        self, final: dict[str, Any], files: list[dict[str, Any]], version: str
    ) -> None:
        """Name the version, write the card (showing the images among ``files``) and the
        manifest, make the staged files read-only."""
        final["version"] = version
        plots = sorted(f["path"] for f in files if Path(f["path"]).suffix.lower() in IMAGE_SUFFIXES)
        # the card and the manifest are fsynced with the whole tree below
        (self.path / CARD_FILE).write_text(render_card(final, plots), encoding="utf-8")
        files.append(self._file_entry(self.path / CARD_FILE))
        validate_manifest(final)
        manifest = json.dumps(final, indent=2, ensure_ascii=False, default=str) + "\n"
        (self.path / versions.MANIFEST_FILE).write_text(manifest, encoding="utf-8")
        _seal_tree(self.path)

    def _rename_into_place(self, directory: Path, target: Path) -> None:
        """Rename the staged version to ``target`` and point ``latest`` at it, or rename it back
        into staging on a failure: nothing is published (docs/dataset-contract.md, step 6)."""
        os.chmod(self.path, READ_ONLY_DIR)
        renamed = False
        try:
            with atomic_path(directory / versions.LATEST_FILE) as pointer:
                pointer.write_text(target.name + "\n", encoding="utf-8")
                fsync_path(pointer)  # a full disk fails here, before anything is renamed
                os.rename(self.path, target)
                renamed = True
                fsync_path(directory)
        except BaseException as exc:
            if renamed:  # take it back into staging: nothing is published
                try:
                    os.rename(target, self.path)
                    fsync_path(directory)
                except OSError as undo:  # the outcome on disk, not the first error alone
                    raise InputError(
                        f"{target} was renamed into place, then publishing failed ({exc}) and "
                        f"it could not be taken back ({undo}): it is published but 'latest' "
                        "may not name it"
                    ) from exc
            raise

    def _commit_remote(
        self, store: Store, final: dict[str, Any], files: list[dict[str, Any]]
    ) -> PublishedVersion:
        """Claim, upload and commit on the object store; the staging directory becomes the
        local copy (when it cannot, the InputError starts with "published <URI>")."""
        remove_stale_staging(self.dataset_dir)
        token = claim_token()
        version = claim_version(store, self.name, token)
        self._write_card_and_manifest(final, files, version)
        os.chmod(self.path, READ_ONLY_DIR)
        location = upload_version(store, self.path, self.name, version, token)
        copy = self.dataset_dir / version
        try:
            if copy.exists():  # a local copy left by a build whose upload never committed
                _force_rmtree(copy)
            os.rename(self.path, copy)
        except OSError as exc:
            raise InputError(
                f"published {location}, but its local copy {copy} could not be made "
                f"({os_error_message(exc)}); readers download it when they need it"
            ) from exc
        self._committed = True
        self._release()
        return PublishedVersion(self.name, version, copy, final, location)

    def _file_entry(self, path: Path) -> dict[str, Any]:
        """``{path, rows, sha256}`` of a staged file for the manifest (rows: Parquet files only)."""
        return {
            "path": path.relative_to(self.path).as_posix(),
            "rows": pq.ParquetFile(path).metadata.num_rows if path.suffix == ".parquet" else None,
            "sha256": file_sha256(path),
        }

    def abort(self) -> None:
        """Delete the staging directory (nothing was published)."""
        self._sink.close()
        self._heldout_sink.close()
        _force_rmtree(self.path)
        self._release()

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock.path.unlink(missing_ok=True)
            self._lock = None

    def _check_open(self) -> None:
        if self._committed or self._lock is None:
            raise InputError(f"staged version {self.path.name} is already published or aborted")
        if self._sealed:
            raise InputError(f"staged version {self.path.name} is sealed: no more rows or rejects")


def publish_version(
    rows: Batches,
    rejects: Batches = (),
    *,
    root: str | Path,
    name: str,
    manifest: Mapping[str, Any],
    heldout_fraction: float = 0.1,
    rows_per_file: int = 200_000,
    before_publish: Callable[[Path], Any] | None = None,
    reuse_unchanged: bool = False,
    local_dir: str | Path | None = None,
) -> PublishedVersion:
    """Stream canonical ``rows`` and ``rejects`` (tables or batches) into a new version of
    :class:`StagedVersion` and publish it; ``before_publish(staging_dir)`` runs once the data
    files are sealed (the place to write ``diagnostics/``), and ``reuse_unchanged`` returns
    the latest version instead when it holds the same data (docs/dataset-contract.md).
    """
    with StagedVersion(
        root,
        name,
        heldout_fraction=heldout_fraction,
        rows_per_file=rows_per_file,
        local_dir=local_dir,
    ) as staged:
        staged.write_rows(rows)
        staged.write_rejects(rejects)
        staged.seal()
        existing = staged.same_data_as_latest() if reuse_unchanged else None
        if existing is not None:
            staged.abort()
            return existing
        if before_publish is not None:
            before_publish(staged.path)
        return staged.commit(manifest)
