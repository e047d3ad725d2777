"""ONNX Runtime runs a sentence-transformers model that carries an ONNX export, without torch
(issue 14): the same vectors as torch, chosen on the CPU by ``runtime: auto``.

The model is a tiny randomly initialised BERT saved as a sentence-transformers model (mean
pooling) and exported with ``torch.onnx.export`` to ``onnx/model.onnx``, the layout of the
pinned all-MiniLM-L6-v2 revision on the hub.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cseaug.encoders.loading import load_encoder, use_onnx
from cseaug.encoders.onnx import ONNX_FILE, OnnxEncoder
from cseaug.errors import ConfigError
from tests.onnx_export import export_onnx

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("sentence_transformers")

TEXTS = ["the river flows", "a city council met", "the museum . the bridge , the storm", "the"]


@pytest.fixture(scope="module")
def st_with_onnx(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sentence_transformers import SentenceTransformer, models

    folder = tmp_path_factory.mktemp("st-onnx")
    transformer = models.Transformer(str(tiny_bert), max_seq_length=32)
    pooling = models.Pooling(transformer.get_embedding_dimension(), "mean")
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(folder))
    export_onnx(folder, folder / ONNX_FILE)
    return folder


def test_auto_picks_onnx_on_the_cpu_and_gives_torchs_vectors(st_with_onnx: Path) -> None:
    onnx = load_encoder(str(st_with_onnx), device="cpu")
    torch_encoder = load_encoder(str(st_with_onnx), device="cpu", runtime="torch")
    assert isinstance(onnx.backend, OnnxEncoder)
    assert not isinstance(torch_encoder.backend, OnnxEncoder)
    a, b = onnx.encode(TEXTS), torch_encoder.encode(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_the_onnx_encoder_imports_no_torch(st_with_onnx: Path) -> None:
    code = (
        "import sys\n"
        "from cseaug.encoders.loading import load_encoder\n"
        f"encoder = load_encoder({str(st_with_onnx)!r}, device='cpu')\n"
        f"print(encoder.encode({TEXTS!r}).shape)\n"
        "print([m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert done.returncode == 0, done.stderr
    shape, imported = done.stdout.strip().splitlines()[-2:]
    assert shape == "(4, 16)" and imported == "[]"


def test_onnx_is_only_used_where_it_can_run(st_with_onnx: Path, tiny_bert: Path) -> None:
    assert use_onnx(str(st_with_onnx), "sentence_transformers", "cpu", "auto")
    assert not use_onnx(str(st_with_onnx), "sentence_transformers", "cuda", "auto")
    assert not use_onnx(str(st_with_onnx), "sentence_transformers", "cpu", "torch")
    assert not use_onnx(str(tiny_bert), "cls", "cpu", "auto")  # no export, [CLS] pooling
    with pytest.raises(ConfigError, match="runtime=onnx"):
        use_onnx(str(tiny_bert), "cls", "cpu", "onnx")


def test_a_model_without_mean_pooling_stays_on_torch(st_with_onnx: Path, tmp_path: Path) -> None:
    import shutil

    other = tmp_path / "cls-pooled"
    shutil.copytree(st_with_onnx, other)
    config = other / "1_Pooling" / "config.json"
    pooling = json.loads(config.read_text())
    pooling["pooling_mode"] = "cls"
    config.write_text(json.dumps(pooling))
    assert not use_onnx(str(other), "sentence_transformers", "cpu", "auto")


def test_batches_are_padded_to_their_longest_sentence_not_a_fixed_length(
    st_with_onnx: Path, tmp_path: Path
) -> None:
    """all-MiniLM-L6-v2's tokenizer.json pads every sentence to 128 tokens; the encoder pads a
    batch to its longest sentence (a 5x difference on Wikipedia sentences), with the same vectors."""
    import shutil

    fixed = tmp_path / "fixed-padding"
    shutil.copytree(st_with_onnx, fixed)
    tokenizer = json.loads((fixed / "tokenizer.json").read_text())
    tokenizer["padding"] = {
        "strategy": {"Fixed": 48}, "direction": "Right", "pad_to_multiple_of": None,
        "pad_id": 0, "pad_type_id": 0, "pad_token": "[PAD]",
    }  # fmt: skip
    (fixed / "tokenizer.json").write_text(json.dumps(tokenizer))
    encoder = OnnxEncoder(str(fixed), batch_size=8, max_seq_length=None, threads=1)
    assert len(encoder.tokenizer.encode_batch(["the river", "the"])[0].ids) < 48
    reference = OnnxEncoder(str(st_with_onnx), batch_size=8, max_seq_length=None, threads=1)
    np.testing.assert_allclose(encoder.encode(TEXTS), reference.encode(TEXTS), atol=1e-6)
