"""Fixtures shared by the whole suite."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from cseaug.config import RunConfig
from cseaug.dataset.manifest import build_manifest
from cseaug.dataset.staging import publish_version
from tests.canonical_rows import make_rows

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"

# Hugging Face libraries read their cache locations once, when first imported: set them
# before any test imports `datasets` (nothing imported above does), so no test reads or
# writes the user's ~/.cache/huggingface (tests/test_hf_cache_isolation.py checks it).
HF_TEST_HOME = tempfile.mkdtemp(prefix="cseaug-tests-hf-")
atexit.register(shutil.rmtree, HF_TEST_HOME, ignore_errors=True)
os.environ["HF_HOME"] = HF_TEST_HOME
os.environ["HF_DATASETS_CACHE"] = os.path.join(HF_TEST_HOME, "datasets")
# The response cache's key file (cseaug.llm.cache.digest_key) is the suite's, not the user's.
os.environ["XDG_CONFIG_HOME"] = os.path.join(HF_TEST_HOME, "config")

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
    starting it takes ~20 s.

    It sets up Prefect's logging first: Prefect does so when ``prefect.main`` is first
    imported (``from prefect import flow``), binding its console handler to the
    ``sys.stderr`` of that moment. Inside a test that captures its output (``capfd``,
    ``capsys``, a CliRunner) that stream is closed at the test's end, and every later flow's
    log line then fails in Prefect's API log handler until a RecursionError (in pendulum's
    ``_safe_timezone``, where the stack ran out) stops the flow: what failed
    tests/flows/test_build_on_a_cluster.py run alone. Here, outside any test, the handler
    gets pytest's stream of the whole session."""
    import prefect.main  # noqa: F401
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield


@pytest.fixture
def rows_factory() -> Callable[..., pa.Table]:
    """:func:`tests.canonical_rows.make_rows`: canonical rows with views, and plain sentences."""
    return make_rows


@pytest.fixture
def run_config(tmp_path: Path) -> RunConfig:
    """An NGCSE STS run config writing under ``tmp_path/storage``."""
    return RunConfig.model_validate(
        {
            "name": "wiki-sts",
            "description": "test build",
            "method": "sts",
            "corpus": {"path": str(tmp_path / "corpus.txt")},
            "patterns": {"source": "paper"},
            "llm": {
                "backend": "openai-compatible",
                "model": "tiny",
                "base_url": "http://127.0.0.1:1/v1",
            },
            "output": {"root": str(tmp_path / "storage"), "rows_per_file": 50},
        }
    )


@pytest.fixture
def manifest(run_config: RunConfig) -> dict[str, Any]:
    """A manifest of ``run_config`` as the pipeline builds it, for publishing test rows."""
    return build_manifest(
        run_config,
        inputs={"corpus": {"name": "corpus", "files": {"corpus.txt": "cd" * 32}}},
        prompts=[{"name": "sts_positive", "sha256": "ab" * 32}],
        example_set={"positive": [["a", "b"]]},
        model={"backend": "openai-compatible", "model": "tiny"},
        token_usage={"requests": 3, "prompt_tokens": 30, "completion_tokens": 9},
        timings={"generate": 1.5},
    )


@pytest.fixture
def publish(tmp_path: Path, manifest: dict[str, Any]) -> Callable[..., Path]:
    """``publish(tables, heldout_fraction=0.0, name="demo")``: a new version under
    ``tmp_path/storage``; returns its directory."""

    def make(tables: Sequence[pa.Table], heldout_fraction: float = 0.0, name: str = "demo") -> Path:
        return publish_version(
            tables,
            [],
            root=tmp_path / "storage",
            name=name,
            manifest=manifest,
            heldout_fraction=heldout_fraction,
        ).path

    return make


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A datasets cache of this test alone (the suite's own, HF_TEST_HOME, is shared).

    ``datasets`` read ``HF_DATASETS_CACHE`` when it was imported, so its config is patched
    too; processes the test starts inherit the variable."""
    datasets = pytest.importorskip("datasets")
    cache = tmp_path / "hf-cache"
    monkeypatch.setenv("HF_DATASETS_CACHE", str(cache))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


@pytest.fixture
def cached_hub_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Path]:
    """Make hub models look downloaded: ``add(name, revision)`` writes a snapshot holding a
    ``config.json`` into a temporary ``HF_HUB_CACHE`` (the layout huggingface_hub reads)."""
    cache = tmp_path / "hub-cache"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))

    def add(name: str, revision: str = "0" * 40) -> Path:
        folder = cache / f"models--{name.replace('/', '--')}"
        (folder / "refs").mkdir(parents=True, exist_ok=True)
        (folder / "refs" / "main").write_text(revision)
        snapshot = folder / "snapshots" / revision
        snapshot.mkdir(parents=True, exist_ok=True)
        (snapshot / "config.json").write_text("{}")
        return snapshot

    return add


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny randomly initialised BERT (:func:`tests.tiny_models.build_tiny_bert`)."""
    pytest.importorskip("transformers")
    from tests.tiny_models import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """One torch thread for a module: two threads on a busy 2-core machine made tiny-model
    generation ~10x slower."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def fsmt_pivots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    """Tiny random en-de, de-en, en-ru, ru-en FSMT models (tests/tiny_fsmt.py), as
    ``backtranslation.pivots``: built once (~10 s) for the modules that only read them."""
    from tests.tiny_fsmt import build_tiny_pivots

    return build_tiny_pivots(tmp_path_factory.mktemp("fsmt"))


S3_BUCKET = "cseaug-test"


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """A moto S3 server on 127.0.0.1 (a free port), moto's server mode (``moto[server]``)."""
    server_module = pytest.importorskip("moto.server")
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_root(s3_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``s3://cseaug-test/<random prefix>`` on :func:`s3_endpoint`: endpoint and credentials
    from the environment only (override ``AWS_ENDPOINT_URL`` to go through a proxy)."""
    import uuid

    from cseaug.dataset.store import Store

    # fsspec caches filesystems by their arguments, not by the environment: a client made
    # for another module's server (stopped since) would be reused
    pytest.importorskip("s3fs").S3FileSystem.clear_instance_cache()

    for key, value in {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }.items():
        monkeypatch.setenv(key, value)
    store = Store.from_root(f"s3://{S3_BUCKET}")
    if not store.fs.exists(S3_BUCKET):
        store.fs.mkdir(S3_BUCKET)
    store.fs.invalidate_cache()
    return f"s3://{S3_BUCKET}/{uuid.uuid4().hex[:8]}"
