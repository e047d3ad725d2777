"""The suite never reads or writes the user's Hugging Face cache (issue 8 item 2).

`datasets` and `huggingface_hub` read their cache locations once, at import: the root
conftest sets them to a temporary folder before anything imports them, and the `hf_cache`
fixture moves `datasets`' cache per test (setting the variable after the import did not).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import HF_TEST_HOME

# Imported at collection, as in a full run where an earlier test imported it: the fixture
# must move the cache of an already imported `datasets`.
datasets = pytest.importorskip("datasets")

USER_CACHE = Path.home() / ".cache" / "huggingface"


def _inside(path: str | Path, folder: str | Path) -> bool:
    return Path(folder).resolve() in [Path(path).resolve(), *Path(path).resolve().parents]


def test_libraries_cache_in_the_suite_folder_not_the_users() -> None:
    hub = pytest.importorskip("huggingface_hub")
    for path in (
        datasets.config.HF_DATASETS_CACHE,
        hub.constants.HF_HOME,
        hub.constants.HF_HUB_CACHE,
    ):
        assert _inside(path, HF_TEST_HOME), path
        assert not _inside(path, USER_CACHE), path


def test_hf_cache_fixture_moves_what_load_dataset_writes(tmp_path: Path, hf_cache: Path) -> None:
    (tmp_path / "rows.jsonl").write_text('{"a": 1}\n', encoding="utf-8")
    datasets.load_dataset("json", data_files=str(tmp_path / "rows.jsonl"), split="train")
    assert any(hf_cache.rglob("*.arrow")), "load_dataset did not write into the test's cache"
