"""A disk that fills at the last step of publishing, and a publisher killed there (issue 21.6).

The outcome a build reports is the outcome on disk: published (said so, read-only, ``latest``
naming it) or nothing published (``latest`` unchanged); a rerun never publishes the same data
under a second number.

The full disk is real where the test may mount one (a 16 MiB tmpfs; the test runs as root in
CI and skips where mounting is refused); the failing pointer rename is an injected ENOSPC,
the one step a real full disk cannot fail on tmpfs.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cseaug.dataset import versions
from cseaug.dataset.staging import PublishedVersion, publish_version
from cseaug.dataset.verify import verify_version
from cseaug.errors import InputError
from cseaug.pipeline import publish as build_publish
from tests.canonical_rows import make_rows
from tests.fake_openai_server import FakeOpenAIServer
from tests.reliability.attack_tools import REPO

pytestmark = pytest.mark.reliability


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs mounted at ``tmp_path/disk`` (skips where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Write zeros to a file on ``disk`` until it is full; returns the file."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as handle:  # unbuffered: nothing left to flush
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def publish(root: Path, manifest: dict[str, Any], start: int) -> PublishedVersion:
    """30 rows (numbered from ``start``) as a build publishes them: an unchanged rerun reuses."""
    return publish_version(
        [make_rows(20, 10, start=start)], root=root, name="demo", manifest=manifest,
        heldout_fraction=0.0, reuse_unchanged=True,
    )  # fmt: skip


def fingerprints(root: Path) -> dict[str, str]:
    """``{version: data fingerprint}`` of every published version of ``demo``."""
    return {
        v: versions.read_manifest(versions.dataset_dir(root, "demo") / v)["fingerprints"]["data"]
        for v in versions.list_versions(root, "demo")
    }


def pointer(root: Path) -> str:
    return (versions.dataset_dir(root, "demo") / versions.LATEST_FILE).read_text().strip()


def assert_outcome_is_on_disk(root: Path, outcome: PublishedVersion | OSError) -> None:
    """Published and said so (read-only, verified, ``latest``), or nothing published."""
    if isinstance(outcome, OSError):
        assert versions.list_versions(root, "demo") == ["v0001"], outcome
        assert pointer(root) == "v0001"
        assert not (versions.dataset_dir(root, "demo") / "v0002").exists()
        return
    assert outcome.version == "v0002" and pointer(root) == "v0002"
    assert stat.S_IMODE(outcome.path.stat().st_mode) == 0o555
    assert verify_version(outcome.path).ok


def test_a_disk_filling_right_after_the_rename_never_leaves_a_writable_unreported_version(
    small_disk: Path, manifest: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the pointer was written after the rename: ENOSPC, exit 2, while v0002 sat
    there verified, writable (0755) and not `latest`, and the rerun published v0003 with the
    same fingerprint."""
    root = small_disk / "storage"
    publish(root, manifest, start=0)
    real_rename = os.rename
    filled: list[Path] = []

    def rename_then_fill(src: Any, dst: Any, **kwargs: Any) -> None:
        real_rename(src, dst, **kwargs)
        if Path(dst).name == "v0002" and not filled:
            filled.append(fill(small_disk))

    monkeypatch.setattr(os, "rename", rename_then_fill)
    outcome: PublishedVersion | OSError
    try:
        outcome = publish(root, manifest, start=100)
    except OSError as exc:
        outcome = exc
    assert filled, "the disk was never filled: the version was not renamed into place"
    monkeypatch.setattr(os, "rename", real_rename)
    assert_outcome_is_on_disk(root, outcome)

    filled[0].unlink()
    rerun = publish(root, manifest, start=100)
    assert rerun.version == "v0002" and pointer(root) == "v0002"
    assert sorted(fingerprints(root)) == ["v0001", "v0002"]


def test_a_failing_pointer_update_takes_the_version_back_and_the_rerun_publishes_it_once(
    tmp_path: Path, manifest: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC on the last rename (``latest``): the version is renamed back out of sight, the
    error is the outcome, and the rerun publishes the data once."""
    root = tmp_path / "storage"
    publish(root, manifest, start=0)
    real_replace = os.replace

    def full_at_the_pointer(src: Any, dst: Any, **kwargs: Any) -> None:
        if Path(dst).name == versions.LATEST_FILE:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", full_at_the_pointer)
    with pytest.raises(OSError, match="No space left on device") as failed:
        publish(root, manifest, start=100)
    monkeypatch.setattr(os, "replace", real_replace)
    assert_outcome_is_on_disk(root, failed.value)
    assert not list(versions.dataset_dir(root, "demo").glob(".staging-*"))

    rerun = publish(root, manifest, start=100)
    assert rerun.version == "v0002" and not rerun.reused and pointer(root) == "v0002"
    assert_outcome_is_on_disk(root, rerun)


KILLED_AFTER_THE_RENAME = """
import json, os, sys
from pathlib import Path
from cseaug.dataset.staging import publish_version
from tests.canonical_rows import make_rows

real_rename = os.rename
def rename_then_die(src, dst, **kwargs):
    real_rename(src, dst, **kwargs)
    if Path(dst).name == "v0002":
        os._exit(9)  # killed between the version's rename and the pointer's
os.rename = rename_then_die
manifest = json.loads(Path(sys.argv[2]).read_text())
publish_version([make_rows(20, 10, start=100)], root=sys.argv[1], name="demo",
                manifest=manifest, heldout_fraction=0.0, reuse_unchanged=True)
"""


def test_a_rerun_after_a_publisher_killed_at_the_last_step_publishes_no_duplicate(
    tmp_path: Path, manifest: dict[str, Any]
) -> None:
    """A publisher killed after its rename leaves v0002 and `latest` on v0001; the rerun of the
    same data finishes that publish (`latest` -> v0002) instead of publishing v0003."""
    root = tmp_path / "storage"
    publish(root, manifest, start=0)
    saved = tmp_path / "manifest.json"
    saved.write_text(json.dumps(manifest, default=str), encoding="utf-8")
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_THE_RENAME, str(root), str(saved)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert killed.returncode == 9, killed.stderr
    assert versions.list_versions(root, "demo") == ["v0001", "v0002"] and pointer(root) == "v0001"

    rerun = publish(root, manifest, start=100)
    assert (rerun.version, rerun.reused) == ("v0002", True) and pointer(root) == "v0002"
    assert sorted(fingerprints(root)) == ["v0001", "v0002"]


@pytest.mark.slow
def test_a_build_whose_exports_fill_the_disk_says_its_version_is_published(
    small_disk: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills right after the publish, as the configured exports are written: the
    build's one-line error starts with "published <version>" (the version is there, read-only,
    verified, `latest`) and says how to write the exports again. Before, the build ended
    with "no space left on device", exit 2, as if nothing had been published."""
    from cseaug.pipeline.local import run_build
    from tests.pipeline.test_build_run import make_config

    real_publish = build_publish.publish_version

    def publish_then_fill(*args: Any, **kwargs: Any) -> PublishedVersion:
        published = real_publish(*args, **kwargs)
        fill(small_disk)
        return published

    monkeypatch.setattr(build_publish, "publish_version", publish_then_fill)
    root = small_disk / "storage"
    with FakeOpenAIServer() as server:
        cfg = make_config(shared_data, root, server.base_url)
        with pytest.raises(InputError) as failed:
            run_build(cfg)
    version = versions.dataset_dir(root, "wiki-sts-test") / "v0001"
    message = str(failed.value)
    assert message.startswith(f"published {version}, but writing its exports failed: ")
    assert "no space left on device" in message and len(message.splitlines()) == 1
    assert versions.latest_version(root, "wiki-sts-test") == "v0001"
    assert verify_version(version).ok and stat.S_IMODE(version.stat().st_mode) == 0o555
