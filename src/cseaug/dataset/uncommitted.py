"""Uncommitted version prefixes on an object store (a ``.claim``, no ``manifest.json``):
find them, and prune the abandoned ones without freeing their numbers; the safety rules:
docs/dataset-contract.md, "Uncommitted prefixes".

Example:
    >>> from cseaug.dataset.store import Store
    >>> store = Store.from_root("memory://uncommitted-demo")
    >>> store.create("datasets/demo/v0001/.claim", b"{}")
    True
    >>> [(p.version, p.files) for p in find_uncommitted("memory://uncommitted-demo")]
    [('v0001', ())]
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cseaug.config import DATASET_NAME_RE as NAME_RE
from cseaug.dataset import lease, versions
from cseaug.dataset.commit_remote import claim_token
from cseaug.dataset.store import Store, StoredObject

DEFAULT_IDLE = timedelta(hours=24)

MARKERS = frozenset({versions.CLAIM_FILE, versions.PRUNED_FILE, versions.LEASE_FILE})


def utc_now() -> datetime:
    """The clock the ages are measured with."""
    return datetime.now(UTC)


@dataclass(frozen=True)
class UncommittedPrefix:
    """``datasets/<dataset>/<version>/`` holding a ``.claim`` and no ``manifest.json``."""

    dataset: str
    version: str
    url: str
    claimed_at: datetime
    last_write: datetime
    files: tuple[str, ...]  # uploaded objects, markers aside: what pruning deletes
    size: int
    lease_until: datetime  # LEASE_TTL after the last renewal (the claim is the first)


def _uncommitted(
    store: Store, dataset: str, version: str, objects: dict[str, StoredObject]
) -> UncommittedPrefix | None:
    """The prefix's state from its ``objects`` (relative to it); None when it is committed,
    unclaimed, or pruned with nothing uploaded since."""
    if versions.MANIFEST_FILE in objects or versions.CLAIM_FILE not in objects:
        return None
    files = tuple(sorted(path for path in objects if path not in MARKERS))
    if versions.PRUNED_FILE in objects and not files:
        return None
    renewals = [
        objects[m].modified for m in (versions.CLAIM_FILE, versions.LEASE_FILE) if m in objects
    ]
    return UncommittedPrefix(
        dataset=dataset,
        version=version,
        url=store.url(f"datasets/{dataset}/{version}"),
        claimed_at=objects[versions.CLAIM_FILE].modified,
        last_write=max(entry.modified for entry in objects.values()),
        files=files,
        size=sum(objects[path].size for path in files),
        lease_until=max(renewals) + lease.LEASE_TTL,
    )


def find_uncommitted(root: str, name: str | None = None) -> list[UncommittedPrefix]:
    """Uncommitted prefixes of dataset ``name`` (default: every dataset) of a remote root,
    by dataset and number (one listing of the store)."""
    store = Store.from_root(root)
    grouped: dict[tuple[str, str], dict[str, StoredObject]] = {}
    under = f"datasets/{versions.check_name(name)}" if name else "datasets"
    for path, entry in store.listing(under).items():
        parts = path.split("/", 3)
        if len(parts) == 4 and NAME_RE.match(parts[1]) and versions.version_number(parts[2]):
            grouped.setdefault((parts[1], parts[2]), {})[parts[3]] = entry
    found = [_uncommitted(store, d, v, objects) for (d, v), objects in grouped.items()]
    return sorted(
        (p for p in found if p is not None),
        key=lambda p: (p.dataset, versions.version_number(p.version) or 0),
    )


def idle_problem(prefix: UncommittedPrefix, idle: timedelta, now: datetime) -> str:
    """Why ``prefix`` is too recent to prune ("" when it has been idle for ``idle`` and its
    build's lease has run out)."""
    if prefix.lease_until > now:
        return (
            f"its build holds a lease on it for {describe_age(prefix.lease_until - now)} "
            "more (renewed while it uploads)"
        )
    quiet = now - prefix.last_write
    if quiet < idle:
        return f"last written {describe_age(quiet)} ago, less than {describe_age(idle)}"
    return ""


def prune(root: str, prefix: UncommittedPrefix, idle: timedelta, now: datetime) -> str:
    """Empty the abandoned ``prefix`` (listed afresh, marked ``.pruned``, its manifest checked
    once more; ``.claim`` stays); returns "" when done, else why it was left alone."""
    store = Store.from_root(root)
    relative = f"datasets/{prefix.dataset}/{prefix.version}"
    objects = {path[len(relative) + 1 :]: e for path, e in store.listing(relative).items()}
    if versions.MANIFEST_FILE in objects:
        return "committed since it was listed"
    current = _uncommitted(store, prefix.dataset, prefix.version, objects)
    if current is None:
        return "pruned since it was listed"
    if problem := idle_problem(current, idle, now):
        return problem
    marked = store.create(f"{relative}/{versions.PRUNED_FILE}", claim_token().encode())
    if store.exists(f"{relative}/{versions.MANIFEST_FILE}"):  # committed meanwhile: not ours
        if marked:
            store.remove([f"{relative}/{versions.PRUNED_FILE}"])
        return "committed since it was listed"
    store.remove(f"{relative}/{path}" for path in current.files)
    return ""


def describe_age(age: timedelta) -> str:
    """``3 d 4 h``, ``2 h 5 min``, ``40 s``: the two largest units."""
    seconds, parts = max(int(age.total_seconds()), 0), []
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if seconds >= size or (size == 1 and not parts):
            parts.append(f"{seconds // size} {unit}")
            seconds %= size
    return " ".join(parts[:2])
