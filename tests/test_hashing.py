"""The one file / JSON sha256 helper: streamed files, directories, canonical JSON."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from cseaug.errors import InputError
from cseaug.hashing import file_sha256, json_sha256, path_sha256


def test_a_file_larger_than_a_block_hashes_as_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "big.bin"
    data = bytes(range(256)) * (3 << 12)  # 3 MiB: several blocks of any reader
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()


def test_a_directory_hashes_names_and_contents(tmp_path: Path) -> None:
    folder = tmp_path / "sts12"
    folder.mkdir()
    (folder / "STS.input.MSRpar.txt").write_text("x\ty\n")
    digest = path_sha256(folder)
    (folder / "STS.input.MSRpar.txt").write_text("x\tz\n")
    assert path_sha256(folder) != digest
    (folder / "STS.input.MSRpar.txt").write_text("x\ty\n")
    assert path_sha256(folder) == digest
    (folder / "STS.input.MSRpar.txt").rename(folder / "renamed.txt")
    assert path_sha256(folder) != digest
    assert path_sha256(folder / "renamed.txt") == file_sha256(folder / "renamed.txt")
    with pytest.raises(InputError, match="does not exist"):
        path_sha256(tmp_path / "missing")


def test_json_is_hashed_in_one_canonical_form() -> None:
    data = {"b": [1, 2], "a": {"y": "é", "x": None}}
    reordered = {"a": {"x": None, "y": "é"}, "b": [1, 2]}
    assert json_sha256(data) == json_sha256(reordered)
    utf8 = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    escaped = json.dumps(data, sort_keys=True, separators=(",", ":"))
    # the forms that LLM cache keys and config fingerprints were defined with
    assert json_sha256(data) == hashlib.sha256(utf8.encode()).hexdigest()
    assert json_sha256(data, ascii_only=True) == hashlib.sha256(escaped.encode()).hexdigest()
