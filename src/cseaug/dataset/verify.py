"""What a version holds is what was published: its files against the sha256 of its manifest.

The manifest lists every published file with its sha256 (``files``: the data files,
``rejects.parquet``, ``README.md`` and every file under ``diagnostics/``; only
``manifest.json`` itself is not listed) and says so (``files_complete: true``; manifests
written before listed only the data files and ``rejects.parquet``). Two ways to check them:

* :func:`read_verified` reads one file whole and hashes the very bytes it returns, so a
  reader that hands data on (:func:`cseaug.dataset.reader.iter_batches`: ``export``, the
  trainer, ``diagnose``) pays for no second read: it parses the Parquet from those bytes.
* :func:`verify_version` (``cseaug verify``, ``cseaug show``) checks every listed file,
  reports files that are present but not listed, and checks the exports written beside the
  version against their record (:mod:`.export_records`; their paths are reported relative
  to the output root, ``exports/<name>/<version>/...``).
* :func:`verify_stored_version` does the same for a version on an object store, hashing
  each stored object as it streams (no local copy is trusted or made).

A mismatch is an :class:`~cseaug.errors.InputError` that names the file (docs/security.md,
"Verification"). A manifest must hold together before any file is checked against it
(:func:`checked_records`): one without the ``files`` list is refused, and ``fingerprints.data``
is recomputed from the data files' recorded sha256, so a file edited together with its
sha256 is caught too. Only a directory without ``manifest.json`` (the staging directory the
diagnostics read during a build, a bare copy) has nothing to be checked against:
:func:`recorded_sha256` returns None for it and the readers read it as it is.

Example:
    report = verify_version("storage/datasets/wiki-sts/v0001")
    report.ok, report.checked  # (True, 7)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from cseaug.dataset import versions
from cseaug.dataset.export_records import RECORD_FILE, check_exports
from cseaug.dataset.store import Store
from cseaug.errors import InputError
from cseaug.hashing import file_sha256, json_sha256
from cseaug.roots import is_uri

FILES_COMPLETE = "files_complete"
"""Manifest key: true when ``files`` lists every file of the version but the manifest."""


def recorded_sha256(version_dir: str | Path) -> dict[str, str] | None:
    """``{relative path: sha256}`` of the files the version's manifest lists; None when there
    is no manifest to check against (a staging directory, a bare copy without one).

    Raises:
        InputError: the manifest lists no file hashes, or its data fingerprint is not the
            one of the data files it lists (:func:`checked_records`).
    """
    if not (Path(version_dir) / versions.MANIFEST_FILE).is_file():
        return None
    return checked_records(versions.read_manifest(version_dir), version_dir)


def checked_records(manifest: dict[str, Any], where: str | Path) -> dict[str, str]:
    """The ``{relative path: sha256}`` a manifest records, once the manifest holds together.

    The publisher lists every file with its sha256 and derives ``fingerprints.data`` from
    the data files' sha256 (:func:`cseaug.dataset.staging.data_fingerprint`); both are
    required, and the fingerprint is recomputed from the list, so a manifest stripped of
    its hashes, or a data file edited together with its sha256, is refused.

    Raises:
        InputError: naming ``where`` (the version) and what is wrong.
    """
    entries = manifest.get("files")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("path"), str) and isinstance(e.get("sha256"), str)
        for e in entries
    ):
        raise InputError(
            f"{where}: its manifest.json does not list its files with their sha256 ('files'), "
            "so nothing it holds can be checked; do not use this version"
        )
    recorded = {entry["path"]: entry["sha256"] for entry in entries}
    fingerprint = (manifest.get("fingerprints") or {}).get("data")
    if fingerprint != recorded_data_fingerprint(recorded):
        raise InputError(
            f"{where}: the data fingerprint of its manifest.json is not the one of the data "
            "files it lists: the manifest was edited after publishing; do not use this version"
        )
    return recorded


def recorded_data_fingerprint(recorded: dict[str, str]) -> str:
    """``fingerprints.data`` recomputed from the recorded sha256 of the data files, in order."""
    return json_sha256(
        [sha256 for path, sha256 in sorted(recorded.items()) if path.startswith("data/")]
    )


def _changed(path: Path) -> InputError:
    return InputError(
        f"{path} does not match the sha256 its version's manifest records: the file was "
        "changed after publishing; do not use this version (cseaug verify lists every "
        "changed file)"
    )


def read_verified(path: Path, version_dir: Path, recorded: dict[str, str]) -> pa.Buffer:
    """The bytes of a version's file, after checking them against the manifest's sha256.

    Args:
        path: the file, inside ``version_dir``.
        version_dir: the version.
        recorded: :func:`recorded_sha256` of the version.

    Raises:
        InputError: the manifest does not list the file, or its bytes differ.
    """
    relative = path.relative_to(version_dir).as_posix()
    if relative not in recorded:
        raise InputError(
            f"{path} is not listed in its version's manifest: it was added after publishing; "
            "do not use this version"
        )
    with pa.OSFile(str(path)) as handle:
        data = handle.read_buffer()
    if hashlib.sha256(data).hexdigest() != recorded[relative]:
        raise _changed(path)
    return data


def check_listed(version_dir: Path, relative_paths: list[str], recorded: dict[str, str]) -> None:
    """Raise InputError naming a file the manifest lists under a folder that is gone.

    Args:
        version_dir: the version.
        relative_paths: the files present under the folder, relative to the version.
        recorded: :func:`recorded_sha256` of the version, narrowed to that folder.
    """
    missing = sorted(set(recorded) - set(relative_paths))
    if missing:
        raise InputError(
            f"{version_dir / missing[0]} is listed in its version's manifest but missing: "
            "the version was changed after publishing; do not use this version"
        )


@dataclass
class VerifyReport:
    """The outcome of :func:`verify_version`: files checked, and what is wrong."""

    version_dir: Path | str
    """The version's directory, or its URI on an object store."""
    checked: int = 0
    """Files of the version found and hashed (those its manifest lists)."""
    exports_checked: int = 0
    """Exports beside the version found and hashed (those its ``exports.json`` records)."""
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)
    complete: bool = True
    """The manifest lists every file (``files_complete``); older manifests list only the
    data files and ``rejects.parquet``, so files they do not list are not counted wrong."""

    def summary(self) -> str:
        """``N files match the sha256 of its manifest`` (and the exports, when there are any)."""
        line = f"{self.checked} files match the sha256 of its manifest"
        if self.exports_checked:
            line += f"; {self.exports_checked} exports match their record (exports.json)"
        return line

    @property
    def ok(self) -> bool:
        return not (self.changed or self.missing or (self.unlisted and self.complete))

    def problems(self) -> list[str]:
        """One line per wrong file."""
        return (
            [f"changed: {path} (sha256 differs from the manifest)" for path in self.changed]
            + [f"missing: {path} (listed in the manifest)" for path in self.missing]
            + [
                f"not listed: {path} (present, not in the manifest)"
                for path in (self.unlisted if self.complete else [])
            ]
        )

    def raise_if_wrong(self) -> None:
        """Raise InputError naming every wrong file (one line)."""
        if not self.ok:
            raise InputError(
                f"{self.version_dir} was changed after publishing: " + "; ".join(self.problems())
            )


def verify_version(version_dir: str | Path) -> VerifyReport:
    """Check every file the manifest of ``version_dir`` lists, and find files it does not list.

    Raises:
        InputError: ``version_dir`` has no (readable) manifest, or one without ``files``.
    """
    version_dir = Path(version_dir)
    recorded = recorded_sha256(version_dir)
    if recorded is None:
        raise InputError(f"{version_dir} has no manifest.json: nothing to verify against")
    complete = bool(versions.read_manifest(version_dir).get(FILES_COMPLETE))
    report = VerifyReport(version_dir, complete=complete)
    for relative, sha256 in sorted(recorded.items()):
        path = version_dir / relative
        if not path.is_file():
            report.missing.append(relative)
            continue
        report.checked += 1
        if file_sha256(path) != sha256:
            report.changed.append(relative)
    checked, changed, missing = check_exports(version_dir)
    report.exports_checked = checked
    report.changed += changed
    report.missing += missing
    present = {
        p.relative_to(version_dir).as_posix() for p in version_dir.rglob("*") if not p.is_dir()
    }
    report.unlisted = sorted(present - set(recorded) - {versions.MANIFEST_FILE})
    return report


def verify_stored_version(root: str | Path, ref: str) -> VerifyReport:
    """:func:`verify_version` of ``name[/version]`` under ``root``, a directory or an fsspec URI.

    On an object store every listed object is hashed as it streams; objects under the
    version's prefix that the manifest does not list are reported (the publisher's
    ``.claim`` aside), and so are the recorded exports under ``<root>/exports/``.

    Raises:
        InputError: no such dataset or committed version.
    """
    if not is_uri(root):
        return verify_version(versions.resolve(root, ref))
    name, version = versions.parse_ref(ref)
    known = versions.list_versions(root, name)
    version = version or (known[-1] if known else None)
    if version not in known:
        versions.resolve(root, ref)  # raises the message that lists what exists
    store = Store.from_root(root)
    prefix = f"datasets/{name}/{version}"
    manifest = versions.read_stored_manifest(root, name, str(version))
    recorded = checked_records(manifest, store.url(prefix))
    report = VerifyReport(store.url(prefix), complete=bool(manifest.get(FILES_COMPLETE)))
    present = set(store.find(prefix))
    for relative, sha256 in sorted(recorded.items()):
        report.checked += _check_object(
            store, f"{prefix}/{relative}", relative, sha256, relative in present, report
        )
    report.unlisted = sorted(
        present - set(recorded) - {versions.MANIFEST_FILE, versions.CLAIM_FILE, versions.LEASE_FILE}
    )
    exports = f"exports/{name}/{version}"
    if store.exists(f"{exports}/{RECORD_FILE}"):
        record = versions.parse_manifest(
            store.read_bytes(f"{exports}/{RECORD_FILE}"), store.url(f"{exports}/{RECORD_FILE}")
        )
        exported = set(store.find(exports))
        for relative, entry in sorted(record.get("files", {}).items()):
            shown = f"{exports}/{relative}"
            report.exports_checked += _check_object(
                store, shown, shown, entry["sha256"], relative in exported, report
            )
    return report


def _check_object(
    store: Store,
    path: str,
    shown: str,
    sha256: str,
    exists: bool,
    report: VerifyReport,
) -> bool:
    """Check ``path`` (relative to the root; ``shown`` in the report), adding it to the
    report's missing or changed files; True when it was there and hashed."""
    if not exists:
        report.missing.append(shown)
        return False
    if store.sha256(path) != sha256:
        report.changed.append(shown)
    return True
