"""``cseaug versions --prune-uncommitted`` while a build uploads over a slow network (issue 21.5).

The build publishes to moto's S3 server through :class:`SlowProxy` (every chunk it sends
held back a while), and a prune with ``--older-than 1s`` runs again and again until it is
done. A live build's lease keeps the pruner away; a build that stopped renewing its lease
is pruned, and then commits nothing and says so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.dataset import lease, versions
from cseaug.dataset.staging import PublishedVersion, publish_version
from cseaug.dataset.store import Store
from tests.canonical_rows import make_rows
from tests.reliability.attack_tools import SlowProxy

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

runner = CliRunner(env={"COLUMNS": "400"})
DELAY = 0.5
"""Seconds each chunk a client sends waits in the proxy: every request takes at least this."""


@pytest.fixture
def slow_root(s3_root: str, s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """:func:`s3_root`, every request of this process to it through a :class:`SlowProxy`."""
    s3fs = pytest.importorskip("s3fs")
    with SlowProxy(s3_endpoint.removeprefix("http://"), DELAY) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
        s3fs.S3FileSystem.clear_instance_cache()  # a cached client would go around the proxy
        yield s3_root
    s3fs.S3FileSystem.clear_instance_cache()


def short_lease(monkeypatch: pytest.MonkeyPatch, ttl: float, renew_every: float) -> None:
    """Leases of ``ttl`` seconds, renewed every ``renew_every`` (the defaults are minutes)."""
    monkeypatch.setattr(lease, "LEASE_TTL", timedelta(seconds=ttl))
    monkeypatch.setattr(lease, "RENEW_EVERY", timedelta(seconds=renew_every))
    monkeypatch.setattr(lease, "SAFETY_MARGIN", timedelta(seconds=ttl / 4))


def publish_while_pruning(root: str, manifest: dict[str, Any]) -> tuple[Any, list[str]]:
    """Publish 40 rows in 8 data files in a thread while ``versions --prune-uncommitted
    --older-than 1s`` runs over and over; returns (the version or the error, each prune's
    output)."""
    outcome: dict[str, Any] = {}

    def publish() -> None:
        try:
            outcome["result"] = publish_version(
                [make_rows(30, 10)], root=root, name="demo", manifest=manifest,
                heldout_fraction=0.0, rows_per_file=5,
            )  # fmt: skip
        except Exception as exc:  # the assertions look at it
            outcome["result"] = exc

    builder = threading.Thread(target=publish, name="build")
    builder.start()
    prunes = []
    while builder.is_alive():
        pruned = runner.invoke(
            app, ["versions", "--root", root, "--prune-uncommitted", "--older-than", "1s"]
        )
        assert pruned.exit_code == 0, pruned.output
        prunes.append(pruned.output)
    builder.join()
    return outcome["result"], prunes


def test_pruning_never_touches_a_prefix_whose_build_is_still_uploading(
    slow_root: str, manifest: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Proves 21.5: the build renews its lease while it uploads, the pruner keeps the prefix
    each time (saying why), and the build publishes a version that verifies. Before, a
    prefix whose newest object was a second old was emptied mid-upload."""
    short_lease(monkeypatch, ttl=8, renew_every=1)
    result, prunes = publish_while_pruning(slow_root, manifest)
    assert isinstance(result, PublishedVersion), result
    assert not [p for p in prunes if "removed s3://" in p], prunes
    assert any("its build holds a lease" in p for p in prunes), prunes
    checked = runner.invoke(app, ["verify", "demo", "--root", slow_root])
    assert checked.exit_code == 0, checked.output
    assert versions.list_versions(slow_root, "demo") == [result.version]


def test_a_build_whose_lease_ran_out_is_pruned_and_publishes_nothing(
    slow_root: str, manifest: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Proves 21.5's other half: a build stalled past its lease (a suspended machine: its
    uploads and its renewals stop for 6 s) may be pruned; it then fails at its commit in one
    line and publishes nothing, so no `latest` points at a version whose data are gone."""
    short_lease(monkeypatch, ttl=3, renew_every=600)
    real_put_file = Store.put_file
    stalled: list[str] = []

    def stall_after_the_first_file(store: Store, local: Path, relative: str) -> None:
        real_put_file(store, local, relative)
        if not stalled:
            stalled.append(relative)
            time.sleep(6)

    monkeypatch.setattr(Store, "put_file", stall_after_the_first_file)
    result, prunes = publish_while_pruning(slow_root, manifest)
    assert any("removed s3://" in p for p in prunes), prunes
    assert isinstance(result, Exception) and "published nothing" in str(result), result
    assert len(str(result).splitlines()) == 1
    assert versions.list_versions(slow_root, "demo") == []
    store = Store.from_root(slow_root)
    assert not store.glob(f"datasets/demo/v*/{versions.MANIFEST_FILE}")
