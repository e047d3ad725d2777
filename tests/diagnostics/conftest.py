"""Fixtures of the diagnostics tests: small versions on disk and a deterministic encoder."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.diagnostics.diag_helpers import BagOfWordsEncoder, write_version


@pytest.fixture
def bow_encoder() -> BagOfWordsEncoder:
    return BagOfWordsEncoder()


@pytest.fixture
def make_version(tmp_path: Path) -> Callable[..., Path]:
    """Write canonical rows as ``<tmp>/datasets/demo/<name>/data/*.parquet`` and return the directory."""

    def make(records: Sequence[Mapping[str, Any]], name: str = "v0001", files: int = 1) -> Path:
        return write_version(tmp_path / "datasets" / "demo" / name, records, files)

    return make
