"""Uncommitted version prefixes on a ``memory://`` root: ``cseaug versions`` warns about them
and ``--prune-uncommitted`` empties the abandoned ones, never a committed version or a recent
claim, and never frees a number (``test_object_store_s3.py`` runs the same on a real S3 server).

Ages are made by backdating the memory filesystem's object times: the command runs on the
real clock.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.dataset import commit_remote, uncommitted, versions
from cseaug.dataset.staging import publish_version
from cseaug.dataset.store import Store
from cseaug.errors import InputError

runner = CliRunner(env={"COLUMNS": "400"})
DATA = "data/train-00000-of-00001.parquet"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh memory:// root; its work directory under tmp_path."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return f"memory://cseaug-prune-{uuid.uuid4().hex}/prefix"


def backdate(store: Store, prefix: str, hours: float) -> None:
    """Make every object under ``prefix`` ``hours`` older (memory filesystem times)."""
    for path in store.fs.find(store.path(prefix)):
        store.fs.store[path].created -= timedelta(hours=hours)


TOKEN = commit_remote.claim_token()
"""The claim token of the builds these tests abandon."""


def abandon(store: Store, name: str = "demo", data: bytes = b"x" * 1000) -> str:
    """A build that claimed a version, uploaded one data file and died; returns the version."""
    version = commit_remote.claim_version(store, name, TOKEN)
    store.fs.pipe_file(store.path(f"datasets/{name}/{version}/{DATA}"), data)
    return version


def snapshot(store: Store, prefix: str) -> dict[str, bytes]:
    return {p: store.read_bytes(f"{prefix}/{p}") for p in store.find(prefix)}


def test_versions_warns_about_each_uncommitted_prefix(root, manifest, rows_factory) -> None:
    store = Store.from_root(root)
    publish_version([rows_factory(3, 3)], root=root, name="demo", manifest=manifest)
    assert abandon(store) == "v0002"
    backdate(store, "datasets/demo/v0002", 50)
    abandon(store, name="other")  # a dataset with nothing committed

    listed = runner.invoke(app, ["versions", "--root", root])
    assert listed.exit_code == 0, listed.output
    assert "demo\tv0001 (latest)" in listed.output
    warnings = [line for line in listed.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, listed.output
    assert warnings[0].startswith(f"warning: {root}/datasets/demo/v0002 is not committed")
    assert "1 files, 1.0 kB; claimed 2 d 2 h ago, last written 2 d 2 h ago" in warnings[0]
    assert "--prune-uncommitted removes it once unwritten for --older-than" in warnings[0]
    assert warnings[1].startswith(f"warning: {root}/datasets/other/v0001 is not committed")

    only = runner.invoke(app, ["versions", "other", "--root", root])
    assert only.exit_code == 0, only.output  # not "no dataset 'other'"
    assert f"{root}/datasets/other/v0001 is not committed" in only.output


def test_prune_removes_only_abandoned_prefixes_and_keeps_their_numbers(
    root, manifest, rows_factory
) -> None:
    store = Store.from_root(root)
    publish_version([rows_factory(3, 3)], root=root, name="demo", manifest=manifest)
    backdate(store, "datasets/demo/v0001", 72)  # an old committed version
    committed = snapshot(store, "datasets/demo/v0001")
    assert abandon(store) == "v0002"
    backdate(store, "datasets/demo/v0002", 30)
    assert abandon(store) == "v0003"  # a claim 2 h old: maybe a slow upload
    backdate(store, "datasets/demo/v0003", 2)
    before = snapshot(store, "datasets")

    dry = runner.invoke(
        app, ["versions", "demo", "--root", root, "--prune-uncommitted", "--dry-run"]
    )
    assert dry.exit_code == 0, dry.output
    assert f"would remove {root}/datasets/demo/v0002: 1 files, 1.0 kB" in dry.output
    assert f"kept {root}/datasets/demo/v0003: last written 2 h ago, less than 1 d" in dry.output
    assert "nothing deleted (--dry-run)" in dry.output
    assert snapshot(store, "datasets") == before

    pruned = runner.invoke(app, ["versions", "demo", "--root", root, "--prune-uncommitted"])
    assert pruned.exit_code == 0, pruned.output
    assert f"removed {root}/datasets/demo/v0002: 1 files, 1.0 kB" in pruned.output
    assert "removed 1 uncommitted prefixes (1 files, 1.0 kB), kept 1" in pruned.output
    assert store.find("datasets/demo/v0002") == [".claim", ".pruned"]  # the number stays taken
    assert snapshot(store, "datasets/demo/v0001") == committed
    assert store.exists(f"datasets/demo/v0003/{DATA}")

    listed = runner.invoke(app, ["versions", "demo", "--root", root])
    assert "v0002" not in listed.output and "demo/v0003 is not committed" in listed.output

    shorter = runner.invoke(
        app, ["versions", "--root", root, "--prune-uncommitted", "--older-than", "90m"]
    )
    assert shorter.exit_code == 0, shorter.output
    assert f"removed {root}/datasets/demo/v0003" in shorter.output
    assert snapshot(store, "datasets/demo/v0001") == committed
    again = runner.invoke(app, ["versions", "demo", "--root", root, "--prune-uncommitted"])
    assert "no uncommitted version prefixes under" in again.output
    published = publish_version([rows_factory(2, 2)], root=root, name="demo", manifest=manifest)
    assert published.version == "v0004"  # neither pruned number is claimed again


def test_a_prefix_committed_after_it_was_listed_is_left_alone(root, manifest) -> None:
    store = Store.from_root(root)
    version = abandon(store)
    backdate(store, f"datasets/demo/{version}", 48)
    [found] = uncommitted.find_uncommitted(root, "demo")
    store.create(f"datasets/demo/{version}/manifest.json", b"{}")  # its build committed it
    now = uncommitted.utc_now()
    assert (
        uncommitted.prune(root, found, timedelta(hours=24), now) == "committed since it was listed"
    )
    assert store.find(f"datasets/demo/{version}") == [".claim", DATA, "manifest.json"]


def test_a_build_whose_prefix_was_pruned_commits_nothing(tmp_path: Path, root) -> None:
    store = Store.from_root(root)
    version = abandon(store)  # presumed dead, but it is only stalled
    backdate(store, f"datasets/demo/{version}", 48)
    [found] = uncommitted.find_uncommitted(root, "demo")
    assert uncommitted.prune(root, found, timedelta(hours=24), uncommitted.utc_now()) == ""
    staged = tmp_path / "staged"
    (staged / "data").mkdir(parents=True)
    (staged / DATA).write_bytes(b"rows")
    (staged / versions.MANIFEST_FILE).write_text("{}")
    with pytest.raises(InputError, match="was pruned as abandoned"):
        commit_remote.upload_version(store, staged, "demo", version, TOKEN)
    assert not store.exists(f"datasets/demo/{version}/manifest.json")
    # the files it uploaded after the prune are uncommitted again, to be pruned later
    [leftover] = uncommitted.find_uncommitted(root, "demo")
    assert leftover.files == (DATA,)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prune-uncommitted", "--older-than", "soon"], "--older-than 'soon' is not a positive"),
        (["--prune-uncommitted", "--older-than", "0h"], "--older-than '0h' is not a positive"),
        (["--dry-run"], "only go with --prune-uncommitted"),
        (["--older-than", "1h"], "only go with --prune-uncommitted"),
    ],
)
def test_wrong_prune_options_are_one_line_errors(root, args, message) -> None:
    abandon(Store.from_root(root))
    result = runner.invoke(app, ["versions", "demo", "--root", root, *args])
    assert isinstance(result.exception, InputError), result.output
    assert message in str(result.exception) and "\n" not in str(result.exception)


def test_prune_refuses_a_local_root_with_a_hint(tmp_path: Path) -> None:
    result = runner.invoke(app, ["versions", "--root", str(tmp_path), "--prune-uncommitted"])
    assert isinstance(result.exception, InputError), result.output
    assert "for object-store roots" in str(result.exception)
    assert ".staging-*" in str(result.exception)


def test_prune_of_an_unknown_dataset_names_the_known_ones(root, manifest, rows_factory) -> None:
    publish_version([rows_factory(2, 2)], root=root, name="demo", manifest=manifest)
    result = runner.invoke(app, ["versions", "nosuch", "--root", root, "--prune-uncommitted"])
    assert isinstance(result.exception, InputError)
    assert "no dataset 'nosuch'" in str(result.exception) and "demo" in str(result.exception)
