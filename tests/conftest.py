"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("CSEAUG_PROGRESS", "0")


def _shared(sub: str) -> Path:
    path = SHARED / sub
    if not path.exists():
        message = f"{path} is absent: tests that read real data need ../shared beside the checkout"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``; skips when absent, fails under CI (CI=true)."""
    return _shared("data")


@pytest.fixture(scope="session")
def shared_models() -> Path:
    """``../shared/models``; skips when absent, fails under CI (CI=true)."""
    return _shared("models")


@pytest.fixture(scope="session")
def shared_papers() -> Path:
    """``../shared/papers``; skips when absent, fails under CI (CI=true)."""
    return _shared("papers")


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """Prefect's test harness (temporary server and database), shared by the whole session:
    starting it takes ~20 s."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield


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
def fsmt_pivots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """Tiny random en-de, de-en, en-ru, ru-en FSMT models (tests/tiny_fsmt.py), as
    ``backtranslation.pivots``."""
    from tests.tiny_fsmt import build_tiny_pivots

    return build_tiny_pivots(tmp_path_factory.mktemp("fsmt"))
