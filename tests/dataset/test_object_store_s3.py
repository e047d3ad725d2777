"""Versions on a real S3-compatible server on 127.0.0.1 (moto's server mode, ``moto[server]``).

A build publishes to ``s3://bucket/prefix``; ``cseaug versions``, ``show``, ``verify`` and
``export`` and ``datasets.load_dataset`` read it there; a publish that dies before its
manifest leaves no visible version, and ``cseaug versions`` warns about its prefix and
``--prune-uncommitted`` empties it once it is old enough; two publishes that race for one name get two names,
because the server refuses the second conditional write (``If-None-Match: *``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.dataset import commit_remote, uncommitted, versions
from cseaug.dataset.staging import publish_version
from cseaug.dataset.store import Store
from cseaug.errors import InputError
from cseaug.pipeline.local import run_build
from tests.fake_openai_server import FakeOpenAIServer
from tests.pipeline.test_build_run import make_config

runner = CliRunner(env={"COLUMNS": "400"})


def test_a_build_publishes_to_s3_and_every_reader_works_there(
    shared_data: Path,
    tmp_path: Path,
    s3_root: str,
    s3_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeOpenAIServer() as server:
        cfg = make_config(shared_data, s3_root, server.base_url)
        summary = run_build(cfg)
    uri = f"{s3_root}/datasets/wiki-sts-test/v0001"
    assert summary.location == uri and summary.message.startswith(f"published {uri} ")
    store = Store.from_root(s3_root)
    stored = store.find("datasets/wiki-sts-test/v0001")
    assert "manifest.json" in stored and "data/train-00000-of-00001.parquet" in stored
    assert summary.exports and all(e.startswith(f"{s3_root}/exports/") for e in summary.exports)
    assert summary.version_dir == cfg.work_dir / "datasets" / "wiki-sts-test" / "v0001"
    # the run store and the LLM cache are local, in the work directory
    assert (cfg.work_dir / "runs").is_dir() and cfg.cache_path.is_file()
    assert not store.exists("runs") and not store.exists("cache")

    listed = runner.invoke(app, ["versions", "--root", s3_root])
    assert listed.exit_code == 0, listed.output
    assert "wiki-sts-test\tv0001 (latest)" in listed.output
    shown = runner.invoke(app, ["show", "wiki-sts-test", "--root", s3_root])
    assert shown.exit_code == 0, shown.output
    assert uri in shown.output and "changed" not in shown.output
    checked = runner.invoke(app, ["verify", "wiki-sts-test/v0001", "--root", s3_root])
    assert checked.exit_code == 0, checked.output
    assert f"ok: {uri}:" in checked.output
    exported = runner.invoke(
        app, ["export", "wiki-sts-test", "--format", "jsonl", "--split", "all", "--root", s3_root]
    )
    assert exported.exit_code == 0, exported.output
    jsonl = f"{s3_root}/exports/wiki-sts-test/v0001/jsonl-all.jsonl"
    assert f"wrote {summary.rows} rows to {jsonl}" in exported.output
    assert store.exists("exports/wiki-sts-test/v0001/jsonl-all.jsonl")

    datasets = pytest.importorskip("datasets")
    # the tests keep the hub offline; this read goes to the loopback S3 server only
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    files = [
        store.url(f"datasets/wiki-sts-test/v0001/{p}") for p in stored if p.startswith("data/")
    ]
    loaded = datasets.load_dataset(
        "parquet",
        data_files=files,
        split="train",
        storage_options={"client_kwargs": {"endpoint_url": s3_endpoint}},
        cache_dir=str(tmp_path / "hf"),
    )
    assert loaded.num_rows == summary.rows

    # an object changed on the store after publishing is caught by verify
    store.fs.pipe_file(store.path("datasets/wiki-sts-test/v0001/rejects.parquet"), b"changed")
    broken = runner.invoke(app, ["verify", "wiki-sts-test", "--root", s3_root])
    assert isinstance(broken.exception, InputError)
    assert "changed: rejects.parquet" in str(broken.exception)


def crash_at_the_manifest(monkeypatch: pytest.MonkeyPatch) -> Callable[..., bool]:
    """Make every write of a ``manifest.json`` fail as a build dying there; returns the real
    :meth:`Store.create`."""
    real_create = Store.create

    def create(self: Store, relative: str, data: bytes) -> bool:
        if relative.endswith(versions.MANIFEST_FILE):
            raise ConnectionError("the build died here")
        return real_create(self, relative, data)

    monkeypatch.setattr(Store, "create", create)
    return real_create


def test_a_publish_that_dies_before_its_manifest_leaves_no_version(
    s3_root: str, manifest, rows_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_create = crash_at_the_manifest(monkeypatch)
    with pytest.raises(ConnectionError):
        publish_version([rows_factory(3, 3)], root=s3_root, name="demo", manifest=manifest)
    store = Store.from_root(s3_root)
    assert store.exists("datasets/demo/v0001/data/train-00000-of-00001.parquet")  # uploaded
    assert versions.list_versions(s3_root, "demo") == [] and versions.list_datasets(s3_root) == []
    listed = runner.invoke(app, ["versions", "--root", s3_root])
    assert listed.exit_code == 0 and "no datasets under" in listed.output
    monkeypatch.setattr(Store, "create", real_create)
    published = publish_version([rows_factory(3, 3)], root=s3_root, name="demo", manifest=manifest)
    assert published.version == "v0002" and versions.list_versions(s3_root, "demo") == ["v0002"]


def test_two_concurrent_publishes_claim_different_names(
    s3_root: str, manifest, rows_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # both publishers list the claims before either writes one: both try v0001, and the
    # server's conditional write lets only one of them have it
    both_listed = threading.Barrier(2, timeout=60)
    real_listing = commit_remote._claimed_numbers

    def list_then_wait(store: Store, name: str) -> list[int]:
        numbers = real_listing(store, name)
        both_listed.wait()
        return numbers

    monkeypatch.setattr(commit_remote, "_claimed_numbers", list_then_wait)
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def publish(n: int) -> None:
        try:
            published = publish_version(
                [rows_factory(2 + n, 2)], root=s3_root, name="demo", manifest=manifest
            )
            results[n] = published.version
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=publish, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert sorted(results.values()) == ["v0001", "v0002"]
    assert versions.list_versions(s3_root, "demo") == ["v0001", "v0002"]


def test_an_abandoned_prefix_is_listed_and_pruned_on_s3(
    s3_root: str, manifest, rows_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    published = publish_version([rows_factory(3, 3)], root=s3_root, name="demo", manifest=manifest)
    store = Store.from_root(s3_root)
    committed = {
        p: store.sha256(f"datasets/demo/v0001/{p}") for p in store.find("datasets/demo/v0001")
    }
    real_create = crash_at_the_manifest(monkeypatch)
    with pytest.raises(ConnectionError):
        publish_version([rows_factory(4, 4)], root=s3_root, name="demo", manifest=manifest)
    monkeypatch.setattr(Store, "create", real_create)
    [dead] = uncommitted.find_uncommitted(s3_root)
    assert (dead.dataset, dead.version) == ("demo", "v0002")
    assert "data/train-00000-of-00001.parquet" in dead.files and dead.size > 0
    listed = runner.invoke(app, ["versions", "--root", s3_root])
    assert listed.exit_code == 0, listed.output
    assert published.version == "v0001" and "demo\tv0001 (latest)" in listed.output
    assert f"warning: {s3_root}/datasets/demo/v0002 is not committed" in listed.output
    assert f"{len(dead.files)} files" in listed.output

    # just died: its lease still runs, so a prune on the real clock keeps it, as it keeps a
    # slow live upload (issue 21.5)
    kept = runner.invoke(app, ["versions", "demo", "--root", s3_root, "--prune-uncommitted"])
    assert f"kept {s3_root}/datasets/demo/v0002: its build holds a lease" in kept.output
    assert set(store.find("datasets/demo/v0002")) == {".claim", ".lease", *dead.files}

    # two days later (S3 times cannot be backdated: the clock is moved on instead)
    later = uncommitted.utc_now() + timedelta(days=2)
    monkeypatch.setattr(uncommitted, "utc_now", lambda: later)
    dry = runner.invoke(app, ["versions", "--root", s3_root, "--prune-uncommitted", "--dry-run"])
    assert f"would remove {s3_root}/datasets/demo/v0002" in dry.output, dry.output
    assert set(store.find("datasets/demo/v0002")) == {".claim", ".lease", *dead.files}
    pruned = runner.invoke(app, ["versions", "--root", s3_root, "--prune-uncommitted"])
    assert pruned.exit_code == 0, pruned.output
    assert f"removed {s3_root}/datasets/demo/v0002" in pruned.output
    assert store.find("datasets/demo/v0002") == [".claim", ".lease", ".pruned"]
    assert {
        p: store.sha256(f"datasets/demo/v0001/{p}") for p in store.find("datasets/demo/v0001")
    } == committed
    again = publish_version([rows_factory(2, 2)], root=s3_root, name="demo", manifest=manifest)
    assert again.version == "v0003"  # the pruned number is not claimed again
