"""The trainer stage against a plain sentence-transformers MNRL fit on the same data, same run.

1. Builds an unsupervised Wiki version the way ``cseaug build`` does: a ``generate_cse``
   build without generator over ``../shared/data/wiki`` (random views: shuffle, cutoff,
   token dropout, repetition), one view per epoch, no LLM.
2. Throughput (training pairs/s, the trainer's ``train_samples_per_second``): the trainer
   stage (:func:`cseaug.trainer.train.train_encoder`, objective ``generate-cse``: reads the
   version, per-epoch view sampler, NT-Xent loss) against **the baseline**, a plain
   ``SentenceTransformerTrainer`` with ``MultipleNegativesRankingLoss`` on a
   ``datasets.Dataset`` of the same (anchor, view 0) pairs; same model (all-MiniLM-L6-v2),
   batch size, sequence length, steps, learning rate, seed and threads. The variants run
   ``--repeats`` times interleaved; the median pairs/s and the ratio are printed (target:
   the trainer >= 0.9x the baseline). Reading the version into training sets is timed
   apart (it happens once, before the training loop).
3. Quality: STS-B test Spearman of all-MiniLM-L6-v2 before and after a short trainer run
   on that version (``--quality-steps``), so a user sees the loop work end to end.

Usage:
    python benchmarks/bench_trainer.py                        # CPU defaults (busy 2-vCPU: --threads 1)
    python benchmarks/bench_trainer.py --steps 100 --batch-size 64 --threads 1
    python benchmarks/bench_trainer.py --device cuda --steps 300 --batch-size 128 --quality-steps 1000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ratio import print_ratio

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"


def build_version(root: Path, sentences: int, views: int) -> Path:
    """A generate_cse version of ``sentences`` Wikipedia sentences (random views, no generator)."""
    from cseaug.config import RunConfig
    from cseaug.pipeline.local import run_build

    cfg = RunConfig.model_validate(
        {
            "name": "wiki-random-views",
            "method": "generate_cse",
            "corpus": {
                "name": "wiki",
                "path": str(SHARED / "wiki" / "wiki1m_for_simcse_first11914.txt"),
            },
            "sample": {"size": sentences, "seed": 0, "include_other": False},
            "generate_cse": {"views": views, "seed": 0},
            "output": {"root": str(root)},
            "diagnostics": {"enabled": False},
        }
    )
    return run_build(cfg).version_dir


def train_config(args: argparse.Namespace, steps: int, sets: list[str]) -> Any:
    from cseaug.trainer.config import TrainConfig

    return TrainConfig.model_validate(
        {
            "objective": "generate-cse",
            "model": "all-MiniLM-L6-v2",
            "max_seq_length": args.max_seq_length,
            "batch_size": args.batch_size,
            "learning_rate": args.learning_rate,
            "epochs": args.views,
            "max_steps": steps,
            "logging_steps": max(1, steps // 10),
            "device": args.device,
            "torch_threads": args.threads,
            # the throughput runs (no sets) train without dev evaluations inside the loop
            "evaluation": {
                "data_dir": str(SHARED),
                "sets": sets,
                "batch_size": 64,
                "dev": "STS-B" if sets else None,
            },
        }
    )


def run_trainer(version: Path, args: argparse.Namespace, out: Path) -> float:
    """pairs/s of the trainer stage's training loop."""
    from cseaug.trainer.train import train_encoder

    return train_encoder(version, train_config(args, args.steps, []), out).record["rows_per_second"]


def run_baseline(version: Path, args: argparse.Namespace, out: Path) -> float:
    """pairs/s of a plain sentence-transformers MNRL fit on (anchor, view 0) of the version."""
    import torch
    from datasets import Dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from cseaug.dataset.reader import augmentation_view, read_rows
    from cseaug.encoders.minilm import model_location
    from cseaug.trainer.train import device_and_precision

    rows = read_rows(version, ["sentence", "augmentations"])
    pairs = Dataset.from_dict(
        {
            "anchor": rows.column("sentence").to_pylist(),
            "positive": augmentation_view(rows.column("augmentations"), 0).to_pylist(),
        }
    )
    device, precision = device_and_precision(train_config(args, args.steps, []))
    if device == "cpu" and args.threads:
        torch.set_num_threads(args.threads)
    model = SentenceTransformer(model_location("all-MiniLM-L6-v2")[0], device=device)
    model.max_seq_length = args.max_seq_length
    training = SentenceTransformerTrainingArguments(
        output_dir=str(out), max_steps=args.steps, per_device_train_batch_size=args.batch_size,
        learning_rate=args.learning_rate, seed=42, data_seed=42, save_strategy="no",
        report_to="none", disable_tqdm=True, use_cpu=device == "cpu", bf16=precision == "bfloat16",
        fp16=precision == "float16", logging_steps=max(1, args.steps // 10),
    )  # fmt: skip
    trainer = SentenceTransformerTrainer(
        model=model,
        args=training,
        train_dataset=pairs,
        loss=MultipleNegativesRankingLoss(model, scale=20.0),
    )
    return trainer.train().metrics["train_samples_per_second"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=4000, help="Wikipedia sentences sampled")
    parser.add_argument("--views", type=int, default=2, help="Generate-CSE views (epochs)")
    parser.add_argument("--steps", type=int, default=60, help="training steps per throughput run")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved runs per variant")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--quality-steps", type=int, default=125, help="steps of the STS-B run")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--threads", type=int, default=None, help="torch threads on CPU")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("CSEAUG_PROGRESS", "0")
    sys.path.insert(0, str(REPO / "src"))

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        version = build_version(work / "storage", args.sentences, args.views)
        print(f"built {version} in {time.perf_counter() - started:.1f} s")

        from cseaug.trainer.data import load_training_data

        started = time.perf_counter()
        data = load_training_data(version, train_config(args, args.steps, []))
        read_seconds = time.perf_counter() - started

        speeds: dict[str, list[float]] = {"baseline (plain MNRL fit)": [], "trainer stage": []}
        for repeat in range(args.repeats):
            speeds["baseline (plain MNRL fit)"].append(
                run_baseline(version, args, work / f"baseline-{repeat}")
            )
            speeds["trainer stage"].append(run_trainer(version, args, work / f"trainer-{repeat}"))
        medians = {name: statistics.median(values) for name, values in speeds.items()}
        baseline = medians["baseline (plain MNRL fit)"]

        from cseaug.trainer.train import train_encoder

        quality = train_encoder(
            version, train_config(args, args.quality_steps, ["STS-B"]), work / "quality"
        ).record

    import torch

    machine = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"torch {torch.__version__}, threads {args.threads or torch.get_num_threads()}, "
        f"device {quality['device']} ({quality['precision']})"
    )
    print(f"\nmachine: {machine}")
    print(
        f"data: {data.rows['views']:,} sentences x {args.views} views; read into training sets in "
        f"{read_seconds:.2f} s; batch {args.batch_size}, {args.max_seq_length} tokens, "
        f"{args.steps} steps x {args.repeats} runs each"
    )
    print(f"{'variant':<28}{'pairs/s (median)':>18}{'runs':>24}{'ratio':>8}")
    for name, value in medians.items():
        runs = ", ".join(f"{v:.1f}" for v in speeds[name])
        print(f"{name:<28}{value:>18.1f}{runs:>24}{value / baseline:>7.2f}x")
    for name, value in medians.items():
        if name != "baseline (plain MNRL fit)":
            print_ratio(f"trainer_{name.split()[0]}_vs_plain_fit", value / baseline, "pairs/s")
    before, after = quality["scores"]["before"]["STS-B"], quality["scores"]["after"]["STS-B"]
    print(
        f"\nSTS-B test Spearman x100, all-MiniLM-L6-v2, {quality['steps']} steps of generate-cse "
        f"on the version: before {100 * before:.2f}, after {100 * after:.2f} "
        f"({100 * (after - before):+.2f}); loss {quality['losses'][0][1]:.3g} -> "
        f"{quality['losses'][-1][1]:.3g}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"machine": machine, "pairs_per_second": speeds, "medians": medians,
                 "read_seconds": read_seconds, "quality": quality["scores"],
                 "quality_losses": quality["losses"]},
                indent=2,
            )
        )  # fmt: skip


if __name__ == "__main__":
    main()
