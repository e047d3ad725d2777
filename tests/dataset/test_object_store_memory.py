"""Versions on an fsspec ``memory://`` root: commit marker last, claims, readers, the guard.

The memory filesystem is in-process and needs no server, so these tests cover the commit
protocol of :mod:`cseaug.dataset.commit_remote` cheaply; ``test_object_store_s3.py`` runs
the same paths against a real S3 server.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.config import load_config
from cseaug.dataset import commit_remote, versions
from cseaug.dataset.protect import refuse_dataset_path
from cseaug.dataset.reader import read_rows
from cseaug.dataset.staging import publish_version
from cseaug.dataset.store import Store
from cseaug.dataset.verify import verify_stored_version
from cseaug.errors import ConfigError, InputError
from cseaug.roots import check_root
from cseaug.trainer.train import default_model_dir


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh memory:// root; its work directory (local copies, staging) under tmp_path."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return f"memory://cseaug-test-{uuid.uuid4().hex}/prefix"


def _publish(root: str, manifest, rows, **kwargs):
    return publish_version([rows], root=root, name="demo", manifest=manifest, **kwargs)


def test_publish_lists_reads_and_verifies_a_version(root, manifest, rows_factory) -> None:
    published = _publish(root, manifest, rows_factory(5, 5))
    store = Store.from_root(root)
    assert published.location == f"{root}/datasets/demo/v0001"
    assert store.exists("datasets/demo/v0001/manifest.json")
    assert store.exists("datasets/demo/v0001/data/train-00000-of-00001.parquet")
    assert versions.list_datasets(root) == ["demo"]
    assert versions.list_versions(root, "demo") == ["v0001"]
    assert versions.latest_version(root, "demo") == "v0001"
    local = versions.resolve(root, "demo")
    assert len(read_rows(local)) == 10
    report = verify_stored_version(root, "demo/v0001")
    assert report.ok and report.checked == len(published.manifest["files"])


def test_uncommitted_version_is_invisible_and_its_name_never_reused(
    root, manifest, rows_factory
) -> None:
    store = Store.from_root(root)
    # a build that claimed v0001 and uploaded a data file, then died before the manifest
    assert commit_remote.claim_version(store, "demo", commit_remote.claim_token()) == "v0001"
    store.fs.pipe_file(store.path("datasets/demo/v0001/data/train-00000-of-00001.parquet"), b"x")
    assert versions.list_versions(root, "demo") == []
    assert versions.list_datasets(root) == []
    with pytest.raises(InputError, match="no dataset 'demo'"):
        versions.resolve(root, "demo")
    published = _publish(root, manifest, rows_factory(2, 2))
    assert published.version == "v0002"
    assert versions.list_versions(root, "demo") == ["v0002"]


def test_claims_are_exclusive(root) -> None:
    store = Store.from_root(root)
    claimed = [
        commit_remote.claim_version(store, "demo", commit_remote.claim_token()) for _ in range(3)
    ]
    assert claimed == ["v0001", "v0002", "v0003"]


def test_a_changed_object_fails_verify(root, manifest, rows_factory) -> None:
    _publish(root, manifest, rows_factory(3, 3))
    store = Store.from_root(root)
    store.fs.pipe_file(store.path("datasets/demo/v0001/rejects.parquet"), b"tampered")
    store.fs.pipe_file(store.path("datasets/demo/v0001/extra.txt"), b"added")
    report = verify_stored_version(root, "demo")
    assert report.changed == ["rejects.parquet"] and report.unlisted == ["extra.txt"]
    with pytest.raises(InputError, match="changed after publishing"):
        report.raise_if_wrong()


def test_unchanged_rebuild_reuses_the_remote_version(root, manifest, rows_factory) -> None:
    rows = rows_factory(4, 4)
    first = _publish(root, manifest, rows)
    again = _publish(root, manifest, rows, reuse_unchanged=True)
    assert again.reused and again.version == first.version == "v0001"
    assert again.location == first.location
    assert versions.list_versions(root, "demo") == ["v0001"]


def test_the_guard_refuses_uris_inside_the_datasets_prefix(root) -> None:
    with pytest.raises(InputError, match="only the publisher"):
        refuse_dataset_path(f"{root}/datasets/demo/x.csv", root, "--out")
    with pytest.raises(InputError, match="published version"):
        refuse_dataset_path("s3://elsewhere/datasets/demo/v0003/data/x.parquet", None, "--out")
    assert refuse_dataset_path(f"{root}/exports/demo/x.csv", root, "--out")


def test_unknown_protocols_are_one_line_config_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(ConfigError, match="unknown storage protocol 'nosuch'"):
        check_root("nosuch://bucket/prefix")
    assert check_root("memory://fine") == "memory://fine"
    config = Path("configs/demo.yaml")
    with pytest.raises(ConfigError) as raised:
        load_config(config, ["output.root=nosuch://bucket/prefix"])
    assert "output.root" in str(raised.value) and "unknown storage protocol" in str(raised.value)
    remote = load_config(config, ["output.root=memory://bucket/prefix"])
    assert (
        remote.work_dir == tmp_path / "cache" / "cseaug" / "roots" / "memory" / "bucket" / "prefix"
    )
    assert remote.cache_path == remote.work_dir / "cache" / "llm.sqlite"
    assert load_config(config, ["output.root=somewhere"]).work_dir == Path("somewhere")


def test_the_trainer_reads_a_committed_remote_version_and_keeps_models_local(
    root, manifest, rows_factory, tmp_path: Path
) -> None:
    _publish(root, manifest, rows_factory(3, 3))
    version_dir = versions.resolve(root, "demo/latest")  # what `cseaug train-encoder` reads
    assert (version_dir / "manifest.json").is_file() and len(read_rows(version_dir)) == 6
    model_dir = default_model_dir(root, version_dir, "ngcse")
    assert tmp_path / "cache" in model_dir.parents and model_dir.name == "demo-v0001-ngcse"


def test_a_manifest_naming_a_path_outside_the_version_is_refused(root, tmp_path: Path) -> None:
    store = Store.from_root(root)
    manifest = {"files": [{"path": "../../../../escape.txt", "sha256": "0" * 64, "rows": None}]}
    store.fs.pipe_file(
        store.path("datasets/demo/v0001/manifest.json"), json.dumps(manifest).encode()
    )
    with pytest.raises(InputError, match="not a path inside the version"):
        versions.resolve(root, "demo")
    assert not list(tmp_path.rglob("escape.txt"))


@pytest.mark.slow
def test_diagnose_on_a_remote_root_uploads_beside_the_version(
    root, manifest, rows_factory, tmp_path: Path
) -> None:
    _publish(root, manifest, rows_factory(4, 4))
    result = CliRunner(env={"COLUMNS": "400"}).invoke(
        app,
        [
            "diagnose",
            "demo",
            "--root",
            root,
            "--set",
            "cs_sample=2",
            "--set",
            "embedding_cache=false",
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"summary.json to {root}/diagnostics/demo/v0001" in result.output
    stored = Store.from_root(root).find("diagnostics/demo/v0001")
    assert "summary.json" in stored and "mer.png" in stored


def test_a_committed_version_whose_local_copy_fails_is_reported_as_published(
    root, manifest, rows_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest is committed, then the local copy's rename fails (a full disk): the
    error starts with "published <URI>" (issue 21.6: the outcome reported is the outcome),
    and readers use the committed version through a fresh copy."""
    import errno
    import os

    real_rename = os.rename

    def full_at_the_copy(src, dst, **kwargs) -> None:
        if Path(dst).name == "v0001":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        real_rename(src, dst, **kwargs)

    monkeypatch.setattr(os, "rename", full_at_the_copy)
    with pytest.raises(InputError, match=r"^published memory://.*/datasets/demo/v0001, but its"):
        _publish(root, manifest, rows_factory(3, 3))
    monkeypatch.setattr(os, "rename", real_rename)
    assert versions.list_versions(root, "demo") == ["v0001"]
    assert read_rows(versions.resolve(root, "demo"), ["id"]).num_rows == 6
