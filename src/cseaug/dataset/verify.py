"""What a version holds is what was published: its files against the sha256 its manifest
lists (``files``); a mismatch is an InputError that names the file (docs/dataset-contract.md
and docs/security.md, "Verification").
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from cseaug.dataset import versions
from cseaug.dataset.export_records import RECORD_FILE, exports_folder
from cseaug.dataset.store import Store
from cseaug.errors import InputError
from cseaug.hashing import json_sha256
from cseaug.roots import is_uri

FILES_COMPLETE = "files_complete"
"""Manifest key: true when ``files`` lists every file of the version but the manifest."""


def recorded_sha256(version_dir: str | Path) -> dict[str, str] | None:
    """``{relative path: sha256}`` of the files the version's manifest lists
    (:func:`checked_records`); None when there is no manifest to check against (a staging
    directory, a bare copy without one)."""
    if not (Path(version_dir) / versions.MANIFEST_FILE).is_file():
        return None
    return checked_records(versions.read_manifest(version_dir), version_dir)


def checked_records(manifest: dict[str, Any], where: str | Path) -> dict[str, str]:
    """The ``{relative path: sha256}`` a manifest records, once the manifest holds together
    (else an InputError naming ``where``): the ``files`` list is required and
    ``fingerprints.data`` must be the one of the data files it lists, so a data file edited
    together with its sha256 is refused too."""
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
    if fingerprint != data_fingerprint(entries):
        raise InputError(
            f"{where}: the data fingerprint of its manifest.json is not the one of the data "
            "files it lists: the manifest was edited after publishing; do not use this version"
        )
    return recorded


def data_fingerprint(entries: list[dict[str, Any]]) -> str:
    """``fingerprints.data`` of a manifest's ``files`` entries: the sha256 of its data files,
    in path order."""
    data = sorted((e["path"], e["sha256"]) for e in entries if e["path"].startswith("data/"))
    return json_sha256([sha256 for _, sha256 in data])


def read_verified(path: Path, version_dir: Path, recorded: dict[str, str]) -> pa.Buffer:
    """The bytes of ``path`` (a file of ``version_dir``), after checking them against
    ``recorded`` (:func:`recorded_sha256` of the version)."""
    relative = path.relative_to(version_dir).as_posix()
    if relative not in recorded:
        raise InputError(
            f"{path} is not listed in its version's manifest: it was added after publishing; "
            "do not use this version"
        )
    with pa.OSFile(str(path)) as handle:
        data = handle.read_buffer()
    if hashlib.sha256(data).hexdigest() != recorded[relative]:
        raise InputError(
            f"{path} does not match the sha256 its version's manifest records: the file was "
            "changed after publishing; do not use this version (cseaug verify lists every "
            "changed file)"
        )
    return data


def check_listed(version_dir: Path, files: list[Path], recorded: dict[str, str]) -> None:
    """Raise InputError naming a data file that ``recorded`` lists and ``files`` (the data
    files present) lacks."""
    present = {path.relative_to(version_dir).as_posix() for path in files}
    missing = sorted(p for p in recorded if p.startswith("data/") and p not in present)
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
    hub_download_files: int = 0
    """Files a Hugging Face Hub download adds (:func:`is_hub_download_file`), not checked."""
    complete: bool = True
    """The manifest lists every file (``files_complete``); older manifests list only the
    data files and ``rejects.parquet``, so files they do not list are not counted wrong."""

    def summary(self) -> str:
        """``N files match the sha256 of its manifest`` (and the exports, when there are any)."""
        line = f"{self.checked} files match the sha256 of its manifest"
        if self.exports_checked:
            line += f"; {self.exports_checked} exports match their record (exports.json)"
        if self.hub_download_files:
            line += f"; {self.hub_download_files} files of a Hub download not checked"
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


def is_hub_download_file(path: str) -> bool:
    """Whether ``path`` (relative to a version) is what ``hf download`` adds beside the pushed
    files: the repository's ``.gitattributes`` and the client's ``.cache/huggingface/``; no
    reader of a version reads them.

    Example:
        >>> [is_hub_download_file(p) for p in (".gitattributes", ".cache/huggingface/x", "data/x")]
        [True, True, False]
    """
    return path == ".gitattributes" or path.startswith(".cache/huggingface/")


def verify_version(version_dir: str | Path) -> VerifyReport:
    """Check every file the manifest of ``version_dir`` lists, find files it does not list,
    and check the exports recorded beside it (InputError without a readable manifest)."""
    version_dir = Path(version_dir)
    if not (version_dir / versions.MANIFEST_FILE).is_file():
        raise InputError(f"{version_dir} has no manifest.json: nothing to verify against")
    manifest = versions.read_manifest(version_dir)
    folder = exports_folder(version_dir.resolve())
    if folder is None:  # a copy outside <root>/datasets/<name>/: no export folder
        return _verify(Store.from_root(version_dir), "", manifest, version_dir, None)
    name, version = version_dir.resolve().parent.name, version_dir.name
    store = Store.from_root(folder.parents[2])
    return _verify(store, f"datasets/{name}/{version}", manifest, version_dir, folder.name)


def verify_stored_version(root: str | Path, ref: str) -> VerifyReport:
    """:func:`verify_version` of ``name[/version]`` under ``root``, a directory or an fsspec URI,
    where every object is hashed as it streams (``.claim`` and ``.lease`` are the publisher's)."""
    if not is_uri(root):
        return verify_version(versions.resolve(root, ref))
    name, version = versions.resolve_version(root, ref)
    store, prefix = Store.from_root(root), f"datasets/{name}/{version}"
    manifest = versions.read_stored_manifest(root, name, version)
    return _verify(store, prefix, manifest, store.url(prefix), version)


def _verify(
    store: Store, prefix: str, manifest: dict[str, Any], shown: Path | str, version: str | None
) -> VerifyReport:
    """The report of the version under ``prefix`` of ``store`` (and of its exports under
    ``exports/<name>/<version>``, unless ``version`` is None)."""
    recorded = checked_records(manifest, shown)
    report = VerifyReport(shown, complete=bool(manifest.get(FILES_COMPLETE)))
    present = set(store.find(prefix))
    report.checked = _check_files(
        report, recorded, present.__contains__, lambda path: store.sha256(f"{prefix}/{path}")
    )
    markers = {versions.MANIFEST_FILE}
    if is_uri(store.uri):
        markers |= {versions.CLAIM_FILE, versions.LEASE_FILE}
    unlisted = present - set(recorded) - markers
    hub_files = {path for path in unlisted if is_hub_download_file(path)}
    report.unlisted, report.hub_download_files = sorted(unlisted - hub_files), len(hub_files)
    exports = f"exports/{prefix.split('/')[1]}/{version}" if version else ""
    if exports and store.exists(f"{exports}/{RECORD_FILE}"):
        record = versions.parse_manifest(
            store.read_bytes(f"{exports}/{RECORD_FILE}"), store.url(f"{exports}/{RECORD_FILE}")
        )
        expected = {f"{exports}/{path}": entry["sha256"] for path, entry in record["files"].items()}
        exported = {f"{exports}/{path}" for path in store.find(exports)}
        report.exports_checked = _check_files(report, expected, exported.__contains__, store.sha256)
    return report


def _check_files(
    report: VerifyReport,
    expected: dict[str, str],
    exists: Callable[[str], bool],
    sha256: Callable[[str], str],
) -> int:
    """Hash every file of ``expected`` (path as reported -> recorded sha256) that exists,
    adding the missing and changed ones to the report; returns how many were hashed."""
    hashed = 0
    for shown, recorded in sorted(expected.items()):
        if not exists(shown):
            report.missing.append(shown)
            continue
        hashed += 1
        if sha256(shown) != recorded:
            report.changed.append(shown)
    return hashed
