"""`cseaug.dataset.verify` on what the tamper tests of tests/reliability do not cover."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from cseaug.dataset.reader import read_rows
from cseaug.dataset.staging import publish_version
from cseaug.dataset.verify import FILES_COMPLETE, verify_version
from cseaug.errors import InputError


def test_a_manifest_from_before_every_file_was_listed_still_verifies(
    tmp_path: Path, manifest, rows_factory
) -> None:
    """Versions published before `files_complete` listed only the data files and rejects:
    their card is not counted against them, while their data are still checked."""
    published = publish_version(
        [rows_factory(3, 3)], [], root=tmp_path, name="demo", manifest=manifest
    )
    old = {k: v for k, v in published.manifest.items() if k != FILES_COMPLETE}
    old["files"] = [f for f in old["files"] if f["path"] != "README.md"]
    path = published.path / "manifest.json"
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    path.write_text(json.dumps(old), encoding="utf-8")
    report = verify_version(published.path)
    assert report.ok and report.unlisted == ["README.md"] and not report.problems()
    assert read_rows(published.path).num_rows == 6


def test_a_manifest_without_a_file_list_is_refused_by_readers_and_verify(
    tmp_path: Path, manifest, rows_factory
) -> None:
    """A manifest stripped of its files' sha256 cannot vouch for anything: readers refuse the
    version (they read it as it was before issue 21.8), and so does verify; a directory
    without any manifest (a staging directory) is still read as it is."""
    published = publish_version(
        [rows_factory(2, 2)], [], root=tmp_path, name="demo", manifest=manifest
    )
    path = published.path / "manifest.json"
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    path.write_text(json.dumps({"config": {}}), encoding="utf-8")
    for check in (
        lambda: read_rows(published.path, ["id"]),
        lambda: verify_version(published.path),
    ):
        with pytest.raises(InputError, match="does not list its files with their sha256"):
            check()
    path.unlink()
    assert read_rows(published.path, ["id"]).num_rows == 4
    with pytest.raises(InputError, match="nothing to verify against"):
        verify_version(published.path)


def test_a_folder_linked_into_a_version_is_reported(tmp_path: Path, manifest, rows_factory) -> None:
    """A symlinked folder added to a published version is named among the unlisted files (the
    listing used to skip symlinked folders, and such a version verified clean)."""
    published = publish_version(
        [rows_factory(3, 2)], [], root=tmp_path, name="demo", manifest=manifest
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "more.parquet").write_text("not listed", encoding="utf-8")
    os.chmod(published.path, stat.S_IRWXU)
    (published.path / "extra").symlink_to(outside, target_is_directory=True)
    assert "extra" in verify_version(published.path).unlisted


def test_the_files_a_hub_download_adds_are_counted_apart(
    tmp_path: Path, manifest, rows_factory
) -> None:
    """``hf download`` adds ``.gitattributes`` and ``.cache/huggingface/``: a downloaded version
    verifies, saying so; any other file added is still named."""
    published = publish_version(
        [rows_factory(3, 2)], [], root=tmp_path, name="demo", manifest=manifest
    )
    os.chmod(published.path, stat.S_IRWXU)
    (published.path / ".gitattributes").write_text("*.parquet filter=lfs\n", encoding="utf-8")
    cache = published.path / ".cache" / "huggingface" / "download" / "data"
    cache.mkdir(parents=True)
    (cache / "train.parquet.metadata").write_text("abc\n", encoding="utf-8")
    report = verify_version(published.path)
    assert report.ok and report.hub_download_files == 2
    assert report.summary().endswith("; 2 files of a Hub download not checked")
    (published.path / ".cache" / "notes.txt").write_text("added", encoding="utf-8")
    assert verify_version(published.path).unlisted == [".cache/notes.txt"]
