"""Fixtures of the translation tests: one torch thread, tiny random FSMT pivots."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """One torch thread for a module: two threads on a busy 2-core machine made tiny-model
    generation ~10x slower."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def pivots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """Tiny random en-de, de-en, en-ru, ru-en FSMT models (tests/tiny_fsmt.py)."""
    from tests.tiny_fsmt import build_tiny_pivots

    return build_tiny_pivots(tmp_path_factory.mktemp("fsmt"))
