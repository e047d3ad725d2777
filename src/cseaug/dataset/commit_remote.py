"""Publishing a staged version to an object store, where a rename is not atomic: claim the
name with a conditional ``.claim``, upload under a lease, commit with ``manifest.json`` last
(docs/dataset-contract.md, "Object storage").
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from cseaug.dataset import versions
from cseaug.dataset.export_records import LOCK_FILE, exports_folder
from cseaug.dataset.lease import Lease
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


def claim_token() -> str:
    """What a build writes into its ``.claim`` and ``.lease`` (a pruner into ``.pruned``): who
    it is, and a unique id."""
    return json.dumps({"pid": os.getpid(), "host": os.uname().nodename, "id": uuid.uuid4().hex})


def claim_version(store: Store, name: str, token: str) -> str:
    """Claim the next free version name of ``name`` on the store with ``token``."""
    versions.check_name(name)
    number = max(_claimed_numbers(store, name), default=0) + 1
    for _ in range(MAX_CLAIM_TRIES):
        candidate = versions.version_name(number)
        if store.create(f"datasets/{name}/{candidate}/{versions.CLAIM_FILE}", token.encode()):
            return candidate
        number += 1  # another build claimed it between our listing and our write
    raise InputError(f"could not claim a version name of {name} on {store.uri}")


def upload_version(store: Store, staging: Path, name: str, version: str, token: str) -> str:
    """Upload the staged version into the prefix claimed with ``token``, holding its lease,
    and commit it with the manifest last; returns its URI (InputError when the prefix is no
    longer this build's)."""
    prefix = f"datasets/{name}/{version}"
    manifest = staging / versions.MANIFEST_FILE
    uploaded = [path for path in files_under(staging) if path != versions.MANIFEST_FILE]
    with Lease(store, prefix, token) as lease:
        with progress_bar(f"Uploading {name}/{version}", total=len(uploaded), unit="files") as bar:
            for relative in uploaded:
                store.put_file(staging / relative, f"{prefix}/{relative}")
                bar.advance(1)
        lease.check()
        check_still_ours(store, prefix, token, uploaded)
        if not store.create(f"{prefix}/{versions.MANIFEST_FILE}", manifest.read_bytes()):
            raise InputError(
                f"{store.url(prefix)} was committed by another writer; this build published nothing"
            )
    return store.url(prefix)


def check_still_ours(store: Store, prefix: str, token: str, uploaded: list[str]) -> None:
    """Raise InputError unless the claimed ``prefix`` is intact (not pruned, its ``.claim``
    holding ``token``, every ``uploaded`` object there), right before the manifest."""
    present = {path[len(prefix) + 1 :] for path in store.listing(prefix)}
    url = store.url(prefix)
    if versions.PRUNED_FILE in present:
        raise InputError(
            f"{url} was pruned as abandoned (cseaug versions --prune-uncommitted) while this "
            "build uploaded it; this build published nothing: run it again"
        )
    claim = f"{prefix}/{versions.CLAIM_FILE}"
    if versions.CLAIM_FILE not in present or store.read_bytes(claim).decode() != token:
        raise InputError(
            f"{url}: its .claim is no longer this build's; this build published nothing: "
            "run it again"
        )
    if missing := sorted(set(uploaded) - present):
        raise InputError(
            f"{url}: {len(missing)} of the files this build uploaded are gone ({missing[0]} "
            "first), deleted while it uploaded; this build published nothing: run it again"
        )


def upload_tree(root: str, folder: Path, relative: str) -> list[str]:
    """Upload every file under the local ``folder`` to ``<root>/<relative>/`` (lock files
    aside; only outside ``datasets/``: exports, diagnostics); returns the URIs."""
    store = Store.from_root(root)
    uploaded = []
    for path in files_under(folder):
        if Path(path).name != LOCK_FILE:
            store.put_file(folder / path, f"{relative}/{path}")
            uploaded.append(store.url(f"{relative}/{path}"))
    return uploaded


def files_under(folder: Path) -> list[str]:
    """The files below ``folder``, as sorted POSIX paths relative to it."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def upload_exports(root: str, version_dir: Path) -> list[str]:
    """Upload the export folder of a version's local copy (with its ``exports.json``) to
    ``<root>/exports/<name>/<version>/``; returns the URIs."""
    folder = exports_folder(version_dir)
    if folder is None or not folder.is_dir():
        return []
    return upload_tree(root, folder, f"exports/{version_dir.parent.name}/{version_dir.name}")
