"""Would ONNX Runtime embed faster than torch on the CPU, and how wrong is it? (issue 14)

The diagnostics embed with sentence-transformers on torch. This measures, in one process,
the default encoder (all-MiniLM-L6-v2) on 800 Wikipedia sentences, one CPU thread each:

- ``torch``: ``SentenceTransformer.encode`` (the baseline, what the diagnostics run);
- ``onnx fp32``: the same weights exported with ``torch.onnx.export``, run by
  ``onnxruntime`` with the model's tokenizer (``tokenizers``) and mean pooling in numpy;
- ``onnx int8``: that model after ``onnxruntime.quantization.quantize_dynamic`` (int8 weights).

Prints each one's sentences/s, its speed against torch, and its error against torch: the
largest 1 - cos(v, v_torch) of a sentence and the largest and mean error of the cosine
similarity of neighbouring pairs (what a diagnostics histogram shows; its bins are 0.025
wide). Needs ``pip install onnxruntime onnx`` (not part of the project's set-up); prints
SKIPPED without them.

    python benchmarks/bench_encoder_runtime.py [--sentences 800]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from gpu_bench import sentences
from ratio import print_ratio


def onnx_encoder(model: Path, tokenizer_file: Path):
    """encode(texts) with onnxruntime: length-sorted batches, mean pooling, L2 norm."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()

    def encode(texts: list[str], batch: int = 64) -> np.ndarray:
        out = np.empty((len(texts), 384), np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch):
            index = order[start : start + batch]
            encoded = tokenizer.encode_batch([texts[i] for i in index])
            feeds = {
                "input_ids": np.array([e.ids for e in encoded], np.int64),
                "attention_mask": np.array([e.attention_mask for e in encoded], np.int64),
                "token_type_ids": np.array([e.type_ids for e in encoded], np.int64),
            }
            hidden = session.run(None, feeds)[0]
            mask = feeds["attention_mask"][..., None].astype(np.float32)
            vectors = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
            out[index] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return out

    return encode


def export(location: str, target: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(location).eval()
    example = AutoTokenizer.from_pretrained(location)(
        ["a short one", "and a longer second sentence"], return_tensors="pt", padding=True
    )

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(
        Hidden(),
        tuple(example[n] for n in names),
        str(target),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
        opset_version=17,
        dynamo=False,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=800)
    args = parser.parse_args()
    missing = [m for m in ("onnxruntime", "onnx") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"SKIPPED: needs {' and '.join(missing)} (pip install onnxruntime onnx)")
        return 0
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from sentence_transformers import SentenceTransformer

    from cseaug.encoders.minilm import minilm_location

    torch.set_num_threads(1)
    texts = sentences(args.sentences)
    location = minilm_location()
    reference_model = SentenceTransformer(location, device="cpu")
    reference_model.encode(texts[:64], batch_size=64)
    started = time.perf_counter()
    reference = reference_model.encode(texts, batch_size=64, normalize_embeddings=True)
    torch_seconds = time.perf_counter() - started
    print(
        f"{len(texts)} sentences, 1 CPU thread; torch: {len(texts) / torch_seconds:.0f} sentences/s"
    )
    with tempfile.TemporaryDirectory() as tmp:
        fp32, int8 = Path(tmp) / "model.onnx", Path(tmp) / "model-int8.onnx"
        export(location, fp32)
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
        pair_reference = np.einsum("ij,ij->i", reference[:-1], reference[1:])
        for name, model in (("onnx fp32", fp32), ("onnx int8", int8)):
            encode = onnx_encoder(model, Path(location) / "tokenizer.json")
            encode(texts[:64])
            started = time.perf_counter()
            vectors = encode(texts)
            seconds = time.perf_counter() - started
            drift = float(np.max(1 - np.einsum("ij,ij->i", vectors, reference)))
            pair_error = np.abs(np.einsum("ij,ij->i", vectors[:-1], vectors[1:]) - pair_reference)
            print(
                f"  {name}: {len(texts) / seconds:.0f} sentences/s, {torch_seconds / seconds:.2f}x "
                f"torch; max 1-cos to torch {drift:.5f}; pair CS error max {pair_error.max():.4f}, "
                f"mean {pair_error.mean():.4f}"
            )
            tag = name.replace(" ", "_")
            print_ratio(f"encoder_{tag}_vs_torch", torch_seconds / seconds, "sentences/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
