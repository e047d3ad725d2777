"""Benchmark: translation throughput of the project's path against a plain ``model.generate`` loop.

Models are FSMT with random weights built here (``tests/tiny_fsmt.py``; a vocabulary of the
benchmark sentences' words, so about one token per word as WMT19's BPE gives). Speed does
not depend on the weights, but output length does: random weights rarely emit ``</s>``,
so every translation runs to the cap, which the default ``max_length_ratio`` (2.0 x the
batch's longest source + 8 tokens) sets as a real model's length would roughly be. Both
sides of every comparison use that cap.

CPU part (always; the tiny size, ``--mid`` adds transformer-base): the same
:class:`~cseaug.augment.translation.Translator` batched and length-sorted (what the stage
does), batched in input order, and one sentence at a time.

GPU part (the WMT19 shape: d_model 1024, 6+6 layers, ffn 8192, 16 heads, vocabulary 42,024,
float16; runs only with CUDA, else SKIPPED with the command), each variant in its own process:

- ``plain@B``: what a user writes: sentences sorted by length, ``tokenizer(batch)``,
  ``model.generate(num_beams=...)``, ``batch_decode``, batches of B; B over ``--gpu-batches``;
  the best is the baseline (issue 13 measured this loop's shape at batch 64: 73 sentences/s
  per direction on an H100);
- ``project``: ``Translator(batch_size="auto")`` (token-budget batches);
- ``round trip plain@B`` / ``round trip project``: en→de→en, the plain loop twice at the best
  B against ``BackTranslator`` (both models resident, tokenizers in a side process).

Prints sentences/s, project / best baseline (target >= 0.90) and the ratio to issue 13's 73
sentences/s per direction.

Usage:
    python benchmarks/bench_backtranslation.py [--sentences 96] [--beams 5] [--mid] [--threads 1]
    python benchmarks/bench_backtranslation.py --gpu-sentences 2048 --gpu-batches 64,128,256,512
    python benchmarks/bench_backtranslation.py --gpu-part-on-cpu --gpu-sentences 48 --gpu-batches 8,16
        # smoke test of the GPU part with the tiny size on the CPU (figures mean nothing)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_bench import (  # noqa: E402
    WIKI,
    cuda_available,
    device_name,
    in_process,
    sentences,
    skipped,
    verdict,
)
from ratio import print_ratio  # noqa: E402
from tiny_fsmt import build_tiny_fsmt  # noqa: E402

from cseaug.augment.translation import Translator, new_tokens_cap  # noqa: E402

ISSUE_13_PER_DIRECTION = 73.0
"""Sentences/s per direction issue 13 measured (WMT19 shape, fp16, 5 beams, batch 64, H100)."""

SIZES = {
    "tiny": {"d_model": 64, "layers": 2, "ffn_dim": 256, "heads": 4},
    "mid": {"d_model": 512, "layers": 6, "ffn_dim": 2048, "heads": 8},
    "wmt19": {"d_model": 1024, "layers": 6, "ffn_dim": 8192, "heads": 16, "vocab_size": 42024},
}


def words_of(texts: list[str]) -> list[str]:
    from sacremoses import MosesTokenizer

    moses = MosesTokenizer(lang="en")
    return sorted({w for t in texts for w in moses.tokenize(t, escape=True)})


def build(name: str, texts: list[str], directory: Path, langs: tuple[str, str]) -> Path:
    return build_tiny_fsmt(
        directory / f"{name}-{'-'.join(langs)}",
        langs,
        words=words_of(texts),
        max_positions=1024,
        seed=0 if langs[0] == "en" else 1,
        **SIZES[name],
    )


def run_cpu(name: str, texts: list[str], args: argparse.Namespace, workdir: Path) -> None:
    started = time.perf_counter()
    path = build(name, texts, workdir, ("en", "de"))
    print(
        f"\n[{name}] built {SIZES[name]} in {time.perf_counter() - started:.0f} s; cpu, float32, "
        f"{len(texts)} sentences, {args.beams} beams"
    )

    def measure(label: str, texts: list[str], **options) -> float:
        translator = Translator(
            str(path), device="cpu", dtype="float32", num_beams=args.beams, **options
        )
        translator(texts[:2])  # warm-up
        start = time.perf_counter()
        translator(texts)
        rate = len(texts) / (time.perf_counter() - start)
        print(f"  {label:<34} {rate:>9.2f} sentences/s")
        return rate

    sorted_rate = measure(
        f"batched {args.batch_size}, length-sorted", texts, batch_size=args.batch_size
    )
    unsorted_rate = measure(
        f"batched {args.batch_size}, input order",
        texts,
        batch_size=args.batch_size,
        sort_by_length=False,
    )
    single = texts[: args.single]
    single_rate = measure(f"one at a time ({len(single)} sentences)", single, batch_size=1)
    print(
        f"  ratio length-sorted / one at a time: {sorted_rate / single_rate:.1f}x; "
        f"length-sorted / input order: {sorted_rate / unsorted_rate:.2f}x"
    )


# --- the GPU part: each variant in its own process ---------------------------------------------


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def plain_loop(
    paths: list[str], texts: list[str], batch: int, beams: int, device: str, dtype: str
) -> dict[str, Any]:
    """The plain loop over each model of ``paths`` in turn (one: a direction; two: a round trip)."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    models = [
        (
            AutoTokenizer.from_pretrained(p),
            AutoModelForSeq2SeqLM.from_pretrained(p, dtype=getattr(torch, dtype)).to(device).eval(),
        )
        for p in paths
    ]

    def translate(tokenizer: Any, model: Any, source: list[str]) -> list[str]:
        order = sorted(range(len(source)), key=lambda i: -len(source[i]))
        out = [""] * len(source)
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            encoded = tokenizer(
                [source[i] for i in chunk], return_tensors="pt", padding=True, truncation=True
            ).to(device)
            with torch.inference_mode():
                generated = model.generate(
                    **encoded,
                    num_beams=beams,
                    max_new_tokens=new_tokens_cap(encoded["input_ids"].shape[1], 256, 2.0),
                    max_length=None,
                )
            for i, text in zip(
                chunk, tokenizer.batch_decode(generated, skip_special_tokens=True), strict=True
            ):
                out[i] = text.strip()
        return out

    def run(source: list[str]) -> None:
        for tokenizer, model in models:
            source = translate(tokenizer, model, source)

    run(texts[:4])  # warm-up
    _sync(device)
    started = time.perf_counter()
    run(texts)
    _sync(device)
    return {"seconds": time.perf_counter() - started, "sentences": len(texts)}


def project_direction(
    path: str, texts: list[str], beams: int, device: str, dtype: str
) -> dict[str, Any]:
    """``Translator(batch_size="auto")`` on one direction."""
    translator = Translator(path, device=device, dtype=dtype, num_beams=beams, batch_size="auto")
    translator(texts[:4])  # warm-up
    _sync(device)
    started = time.perf_counter()
    translator(texts)
    _sync(device)
    return {
        "seconds": time.perf_counter() - started,
        "sentences": len(texts),
        "budget": str(translator.budget()),
    }


def project_round_trip(
    paths: list[str], texts: list[str], beams: int, device: str, dtype: str
) -> dict[str, Any]:
    """``BackTranslator`` round trip through one pivot (tokenizer process on a GPU)."""
    from cseaug.augment.backtranslate import BackTranslator

    backtranslator = BackTranslator(
        {"de": (paths[0], paths[1])},
        mer_range=(0.0, 1.0),
        num_beams=beams,
        device=device,
        dtype=dtype,
        batch_size="auto",
    )
    try:
        backtranslator.round_trip(texts[:4], "de")  # warm-up (and the tokenizer process's start)
        _sync(device)
        started = time.perf_counter()
        backtranslator.round_trip(texts, "de")
        _sync(device)
        seconds = time.perf_counter() - started
    finally:
        backtranslator.close()
    return {"seconds": seconds, "sentences": len(texts), "resident": backtranslator.resident}


def run_gpu_part(size: str, args: argparse.Namespace, device: str, workdir: Path) -> None:
    dtype = "float16" if device.startswith("cuda") else "float32"
    texts = sentences(args.gpu_sentences, seed=1)
    forward = str(build(size, texts, workdir, ("en", "de")))
    backward = str(build(size, texts, workdir, ("de", "en")))
    print(
        f"\n[{size} on {device_name(device)}] {SIZES[size]}, {dtype}, {len(texts)} sentences, "
        f"{args.beams} beams"
    )
    rates: dict[str, float] = {}

    def record(name: str, result: dict[str, Any]) -> None:
        if "error" in result:
            print(f"  {name:<28} FAILED: {result['error']}")
            return
        rates[name] = result["sentences"] / result["seconds"]
        extra = {k: v for k, v in result.items() if k not in ("seconds", "sentences")}
        print(f"  {name:<28} {rates[name]:>9.2f} sentences/s {extra or ''}", flush=True)

    for batch in (int(b) for b in args.gpu_batches.split(",")):
        record(
            f"plain@{batch}",
            in_process(plain_loop, [forward], texts, batch, args.beams, device, dtype),
        )
    record("project", in_process(project_direction, forward, texts, args.beams, device, dtype))
    plain = {k: v for k, v in rates.items() if k.startswith("plain@")}
    if not plain or "project" not in rates:
        return
    best = max(plain, key=plain.get)
    best_batch = int(best.split("@")[1])
    record(
        f"round trip plain@{best_batch}",
        in_process(plain_loop, [forward, backward], texts, best_batch, args.beams, device, dtype),
    )
    record(
        "round trip project",
        in_process(project_round_trip, [forward, backward], texts, args.beams, device, dtype),
    )
    print(f"  one direction: project vs {best}: {verdict(rates['project'], plain[best])}")
    print_ratio(
        f"backtranslation_{size}_project_vs_plain", rates["project"] / plain[best], "target >= 0.90"
    )
    if f"round trip plain@{best_batch}" in rates and "round trip project" in rates:
        print(
            "  round trip: project vs plain: "
            + verdict(rates["round trip project"], rates[f"round trip plain@{best_batch}"])
        )
    if size == "wmt19":
        print(
            f"  against issue 13's {ISSUE_13_PER_DIRECTION:.0f} sentences/s per direction (H100, "
            f"batch 64): project {rates['project'] / ISSUE_13_PER_DIRECTION:.2f}x, "
            f"{best} {plain[best] / ISSUE_13_PER_DIRECTION:.2f}x"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=96)
    parser.add_argument("--single", type=int, default=32, help="sentences of the one-at-a-time run")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--beams", type=int, default=5)
    parser.add_argument(
        "--mid", action="store_true", help="also run the transformer-base size on CPU"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch CPU threads (1 is fastest on a busy 2-core box)",
    )
    parser.add_argument("--gpu-sentences", type=int, default=2048)
    parser.add_argument("--gpu-batches", default="64,128,256,512")
    parser.add_argument(
        "--gpu-part-on-cpu",
        action="store_true",
        help="run the GPU part with the tiny size on the CPU (a smoke test of this script)",
    )
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # for the spawned variants too

    import torch

    torch.set_num_threads(args.threads)
    texts = sentences(args.sentences)
    print(
        f"torch {torch.__version__}, {args.threads} CPU thread(s); sentences from "
        f"{'wiki' if WIKI.is_file() else 'a synthetic corpus'}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if args.gpu_part_on_cpu:
            run_gpu_part("tiny", args, "cpu", workdir)
            return 0
        run_cpu("tiny", texts, args, workdir)
        if args.mid:
            run_cpu("mid", texts[: max(8, args.sentences // 4)], args, workdir)
        if cuda_available():
            run_gpu_part("wmt19", args, "cuda", workdir)
        else:
            skipped(
                "the WMT19-size comparison with a plain generate loop",
                f"python benchmarks/bench_backtranslation.py --gpu-sentences {args.gpu_sentences} "
                f"--gpu-batches {args.gpu_batches}",
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
