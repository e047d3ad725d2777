"""Publishing a staged version to an object store, where a rename is not atomic.

The version is staged locally as on a local root (:class:`cseaug.dataset.staging.StagedVersion`,
in the root's work directory, :mod:`cseaug.roots`); then:

1. **claim** a name: a conditional write of ``datasets/<name>/<version>/.claim``
   (:meth:`cseaug.dataset.store.Store.create`: S3 ``If-None-Match: *``). A name someone
   else holds (committed, being uploaded, or left by a crashed upload) is never reused:
   the next number is tried. Two builds therefore never claim the same name.
2. **upload** every file of the version but ``manifest.json`` into the claimed prefix,
   which no other writer touches.
3. **commit**: write ``manifest.json`` last, again with a conditional write. Readers list
   only versions whose manifest exists (:mod:`cseaug.dataset.versions`), so a crash
   before this step leaves nothing visible, and a committed version's objects are never
   written again. A prefix found pruned (``.pruned``, :mod:`cseaug.dataset.uncommitted`:
   this build was idle so long it was presumed dead) is not committed.

Exports are written locally beside the local copy and uploaded to
``<root>/exports/<name>/<version>/`` with their record (:func:`upload_exports`);
``cseaug diagnose`` uploads to ``<root>/diagnostics/<name>/<version>/`` (:func:`upload_tree`).

Example:
    >>> version = claim_version(store, "wiki-sts")  # doctest: +SKIP
    >>> upload_version(store, staging_dir, "wiki-sts", version)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cseaug.dataset import versions
from cseaug.dataset.export_records import LOCK_FILE, exports_folder
from cseaug.dataset.store import Store
from cseaug.errors import InputError
from cseaug.progress import progress_bar

MAX_CLAIM_TRIES = 1000


def _claimed_numbers(store: Store, name: str) -> list[int]:
    """Numbers of every version prefix of ``name``, committed or only claimed."""
    numbers = [
        versions.version_number(path.split("/")[2])
        for path in store.glob(f"datasets/{name}/v*/{versions.CLAIM_FILE}")
    ]
    return [n for n in numbers if n is not None]


def claim_version(store: Store, name: str, version: str | None = None) -> str:
    """Claim ``version`` (or the next free number) of ``name`` on the store; returns it.

    Raises:
        InputError: the explicit ``version`` is taken (published versions are never rewritten).
    """
    versions.check_name(name)
    token = json.dumps({"pid": os.getpid(), "host": os.uname().nodename}).encode()
    if version is not None:
        if not store.create(f"datasets/{name}/{version}/{versions.CLAIM_FILE}", token):
            raise InputError(
                f"version {name}/{version} exists already on {store.uri}; published versions "
                "are never rewritten"
            )
        return version
    number = max(_claimed_numbers(store, name), default=0) + 1
    for _ in range(MAX_CLAIM_TRIES):
        candidate = versions.version_name(number)
        if store.create(f"datasets/{name}/{candidate}/{versions.CLAIM_FILE}", token):
            return candidate
        number += 1  # another build claimed it between our listing and our write
    raise InputError(f"could not claim a version name of {name} on {store.uri}")


def upload_version(store: Store, staging: Path, name: str, version: str) -> str:
    """Upload the staged version into its claimed prefix, the manifest last; returns its URI.

    Raises:
        InputError: the staging directory has no manifest, or the version was committed
            by someone else (a claim that was not ours).
    """
    prefix = f"datasets/{name}/{version}"
    manifest = staging / versions.MANIFEST_FILE
    if not manifest.is_file():
        raise InputError(f"{staging} has no {versions.MANIFEST_FILE}: nothing to commit")
    files = sorted(
        p for p in staging.rglob("*") if p.is_file() and p.name != versions.MANIFEST_FILE
    )
    with progress_bar(f"Uploading {name}/{version}", total=len(files), unit="files") as bar:
        for path in files:
            store.put_file(path, f"{prefix}/{path.relative_to(staging).as_posix()}")
            bar.advance(1)
    if store.exists(f"{prefix}/{versions.PRUNED_FILE}"):
        raise InputError(
            f"{store.url(prefix)} was pruned as abandoned (cseaug versions --prune-uncommitted) "
            "while this build uploaded it; this build published nothing: run it again"
        )
    if not store.create(f"{prefix}/{versions.MANIFEST_FILE}", manifest.read_bytes()):
        raise InputError(
            f"{store.url(prefix)} was committed by another writer; this build published nothing"
        )
    return store.url(prefix)


def upload_tree(root: str, folder: Path, relative: str) -> list[str]:
    """Upload every file under the local ``folder`` to ``<root>/<relative>/`` (lock files
    aside); returns the URIs. Only for folders outside ``datasets/`` (exports, diagnostics),
    whose newer files replace the stored ones as they do on a local root."""
    store = Store.from_root(root)
    uploaded = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != LOCK_FILE):
        target = f"{relative}/{path.relative_to(folder).as_posix()}"
        store.put_file(path, target)
        uploaded.append(store.url(target))
    return uploaded


def upload_exports(root: str, version_dir: Path) -> list[str]:
    """Upload the export folder of a version's local copy (``<work dir>/exports/<name>/<version>``,
    with its ``exports.json`` record) to ``<root>/exports/<name>/<version>/``; returns the URIs.
    """
    folder = exports_folder(version_dir)
    if folder is None or not folder.is_dir():
        return []
    return upload_tree(root, folder, f"exports/{version_dir.parent.name}/{version_dir.name}")
