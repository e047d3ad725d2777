"""The diagnostics encoder loads, and embeds the anchors, while the LLM works (issue 14).

The encoder is a tiny randomly initialised BERT ([CLS] pooling), the LLM the loopback
OpenAI-compatible server, the corpus and STS12 examples the real files in ../shared/data.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.build.local import run_build
from cseaug.build.plan import plan_build
from cseaug.build.preload import EncoderPreload
from cseaug.build.run import BuildRun
from cseaug.config import DiagnosticsConfig
from tests.build.test_build_run import make_config
from tests.fake_openai_server import FakeOpenAIServer

pytest.importorskip("transformers")


def diagnostics(tiny_bert: Path) -> dict:
    return {
        "enabled": True,
        "encoder": str(tiny_bert),
        "pooling": "cls",
        "max_seq_length": 32,
        "cs_sample": 1000,
    }


def test_the_preload_embeds_the_anchors_so_diagnostics_find_them_cached(
    tiny_bert: Path, tmp_path: Path
) -> None:
    cfg = DiagnosticsConfig(**diagnostics(tiny_bert))
    preload = EncoderPreload(cfg, tmp_path / "embeddings", ["A cat sat.", "A dog ran."])
    encoder = preload.get()
    assert encoder.stats["encoded"] == 2
    encoder.encode(["A dog ran.", "A cat sat."])
    assert encoder.stats == {"memory_hits": 2, "disk_hits": 0, "encoded": 2}
    preload.close()
    assert encoder.backend.model is None  # freed


def test_a_build_hands_the_preloaded_encoder_to_its_diagnostics(
    shared_data: Path, tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Diagnostics that would load an encoder of their own fail here: the build succeeds
    only because the publish step passes the one the plan started loading."""

    def no_second_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("diagnostics loaded an encoder of their own")

    monkeypatch.setattr("cseaug.diagnostics.version.encoder_from_config", no_second_load)
    with FakeOpenAIServer() as server:
        cfg = make_config(
            shared_data, tmp_path, server.base_url, diagnostics=diagnostics(tiny_bert)
        )
        summary = run_build(cfg)
        assert (summary.version_dir / "diagnostics" / "cs.png").is_file()

        # Every shard is finished now: nothing to overlap with, so nothing is preloaded
        # (an unchanged rebuild that publishes nothing never loads the encoder).
        with BuildRun(cfg) as again:
            plan_build(again)
            assert again.diagnostics_encoder() is None


def test_a_failed_preload_is_raised_where_the_encoder_is_needed_and_closes_quietly(
    tmp_path: Path,
) -> None:
    cfg = DiagnosticsConfig(encoder=str(tmp_path / "no-such-model"), pooling="cls")
    preload = EncoderPreload(cfg, None, ["A cat sat."])
    with pytest.raises(Exception, match="no-such-model"):
        preload.get()
    preload.close()
