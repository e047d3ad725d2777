"""Benchmark: translation throughput, batched and length-sorted against one sentence at a time.

Models are FSMT with random weights built here (``tests/tiny_fsmt.py``; a vocabulary of the
benchmark sentences' words, so about one token per word as WMT19's BPE gives). Speed does
not depend on the weights, but output length does: random weights rarely emit ``</s>``,
so every translation runs to the cap, which the default ``max_length_ratio`` (2.0 x the
batch's longest source + 8 tokens) sets as a real model's length would roughly be.

Three runs of the same :class:`~cseaug.augment.backtranslate.Translator`, same sentences:
batched and length-sorted (what the stage does), batched in input order, one at a time.

Sizes:
  tiny    d_model 64, 2+2 layers, ffn 256 (CPU; always runs)
  mid     d_model 512, 6+6 layers, ffn 2048 (transformer-base; CPU with --mid)
  wmt19   d_model 1024, 6+6 layers, ffn 8192, 16 heads, vocabulary 42,024: the size of
          facebook/wmt19-en-de; runs only when CUDA is available (float16), else SKIPPED

Usage:
    python benchmarks/bench_backtranslation.py [--sentences 96] [--beams 5] [--mid] [--threads 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from tiny_fsmt import build_tiny_fsmt  # noqa: E402

from cseaug.augment.translation import Translator  # noqa: E402

WIKI = REPO.parent / "shared/data/wiki/wiki1m_for_simcse_first11914.txt"

SIZES = {
    "tiny": {"d_model": 64, "layers": 2, "ffn_dim": 256, "heads": 4},
    "mid": {"d_model": 512, "layers": 6, "ffn_dim": 2048, "heads": 8},
    "wmt19": {"d_model": 1024, "layers": 6, "ffn_dim": 8192, "heads": 16, "vocab_size": 42024},
}


def sentences(n: int, seed: int = 0) -> list[str]:
    if WIKI.is_file():
        lines = [line.strip() for line in WIKI.read_text(encoding="utf-8").splitlines()]
        lines = [line for line in lines if 3 <= len(line.split()) <= 80]
    else:
        rng = random.Random(seed)
        words = [f"word{i}" for i in range(3000)]
        lines = [" ".join(rng.choices(words, k=rng.randint(3, 60))) + "." for _ in range(5000)]
    return random.Random(seed).sample(lines, n)


def words_of(texts: list[str]) -> list[str]:
    from sacremoses import MosesTokenizer

    moses = MosesTokenizer(lang="en")
    return sorted({w for t in texts for w in moses.tokenize(t, escape=True)})


def run(
    name: str, texts: list[str], args: argparse.Namespace, device: str, dtype: str, workdir: Path
) -> None:
    size = SIZES[name]
    started = time.perf_counter()
    path = build_tiny_fsmt(
        workdir / name, ("en", "de"), words=words_of(texts), max_positions=1024, **size
    )
    print(
        f"\n[{name}] built {size} in {time.perf_counter() - started:.0f} s; {device}, {dtype}, "
        f"{len(texts)} sentences, {args.beams} beams"
    )

    def measure(label: str, texts: list[str], **options) -> float:
        translator = Translator(
            str(path), device=device, dtype=dtype, num_beams=args.beams, **options
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
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    texts = sentences(args.sentences)
    print(
        f"torch {torch.__version__}, {args.threads} CPU thread(s); sentences from "
        f"{'wiki' if WIKI.is_file() else 'a synthetic corpus'}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        run("tiny", texts, args, "cpu", "float32", workdir)
        if args.mid:
            run("mid", texts[: max(8, args.sentences // 4)], args, "cpu", "float32", workdir)
        if torch.cuda.is_available():
            run("wmt19", sentences(max(args.sentences, 512)), args, "cuda", "float16", workdir)
        else:
            print(
                "\n[wmt19] SKIPPED: no CUDA device. The WMT19-size configuration (d_model 1024, "
                "6+6 layers, ffn 8192, vocabulary 42,024, float16) runs only on a GPU."
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
