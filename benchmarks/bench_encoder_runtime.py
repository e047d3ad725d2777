"""Would ONNX Runtime embed faster than torch on the CPU, and how wrong is it? (issue 14)

The diagnostics embed with sentence-transformers on torch. This measures, in one process,
the default encoder (all-MiniLM-L6-v2) on 800 Wikipedia sentences, one CPU thread each:

- ``torch``: ``SentenceTransformer.encode`` (the baseline, what the diagnostics run);
- ``onnx fp32``: the same weights exported with ``torch.onnx.export`` and run by the
  project's ONNX Runtime encoder (:mod:`cseaug.encoders.onnx`);
- ``onnx int8``: that model after ``onnxruntime.quantization.quantize_dynamic`` (int8 weights).

Each loads once (its load time printed); then ``--rounds`` interleaved rounds embed every
sentence with an empty in-memory cache, and the median is kept. Prints each one's
sentences/s, its speed against torch, and its error against torch: the
largest 1 - cos(v, v_torch) of a sentence and the largest and mean error of the cosine
similarity of neighbouring pairs (what a diagnostics histogram shows; its bins are 0.025
wide). Needs ``pip install onnxruntime onnx`` (not part of the project's set-up); prints
SKIPPED without them.

    python benchmarks/bench_encoder_runtime.py [--sentences 800]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from gpu_bench import sentences
from ratio import print_ratio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the ONNX export the tests use: tests/onnx_export.py


def timed(encoder, texts: list[str]) -> float:
    """Seconds to embed ``texts`` with an empty in-memory cache."""
    encoder._memory.clear()
    started = time.perf_counter()
    encoder.encode(texts)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median)")
    args = parser.parse_args()
    missing = [m for m in ("onnxruntime", "onnx") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"SKIPPED: needs {' and '.join(missing)} (pip install onnxruntime onnx)")
        return 0
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from cseaug.encoders.loading import load_encoder
    from cseaug.encoders.minilm import minilm_location
    from cseaug.encoders.onnx import ONNX_FILE
    from tests.onnx_export import export_onnx

    texts = sentences(args.sentences)
    with tempfile.TemporaryDirectory() as tmp:
        models = {"torch": Path(tmp) / "fp32", "onnx fp32": Path(tmp) / "fp32"}
        shutil.copytree(minilm_location(), models["torch"])
        (models["torch"] / ONNX_FILE).parent.mkdir(exist_ok=True)
        if not (models["torch"] / ONNX_FILE).is_file():
            export_onnx(models["torch"], models["torch"] / ONNX_FILE)
        models["onnx int8"] = Path(tmp) / "int8"
        shutil.copytree(models["torch"], models["onnx int8"])
        quantize_dynamic(
            str(models["torch"] / ONNX_FILE),
            str(models["onnx int8"] / ONNX_FILE),
            weight_type=QuantType.QInt8,
        )
        encoders = {}
        for name, folder in models.items():
            runtime = "torch" if name == "torch" else "onnx"
            started = time.perf_counter()
            encoders[name] = load_encoder(str(folder), device="cpu", runtime=runtime)
            print(f"  {name}: loaded in {time.perf_counter() - started:.1f} s", flush=True)
            encoders[name].encode(texts[:64])
        seconds: dict[str, list[float]] = {name: [] for name in encoders}
        for _ in range(args.rounds):
            for name, encoder in encoders.items():
                seconds[name].append(timed(encoder, texts))
        vectors = {name: encoder.encode(texts) for name, encoder in encoders.items()}
    base = statistics.median(seconds["torch"])
    reference = vectors["torch"]
    pair_reference = np.einsum("ij,ij->i", reference[:-1], reference[1:])
    print(f"{len(texts)} sentences, 1 CPU thread, median of {args.rounds} interleaved rounds")
    print(f"  torch: {len(texts) / base:.0f} sentences/s (the baseline)")
    for name in ("onnx fp32", "onnx int8"):
        median = statistics.median(seconds[name])
        drift = float(np.max(1 - np.einsum("ij,ij->i", vectors[name], reference)))
        pair = np.abs(np.einsum("ij,ij->i", vectors[name][:-1], vectors[name][1:]) - pair_reference)
        print(
            f"  {name}: {len(texts) / median:.0f} sentences/s, {base / median:.2f}x torch; max "
            f"1-cos to torch {drift:.5f}; pair CS error max {pair.max():.4f}, mean {pair.mean():.4f}"
        )
        print_ratio(f"encoder_{name.replace(' ', '_')}_vs_torch", base / median, "sentences/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
