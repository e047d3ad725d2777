"""VAEGPT-Sim training speed and peak memory against plain GPT-2 fine-tuning, same run.

Random weights and random token ids (nothing is downloaded); every step is a full
optimisation step (forward, backward, AdamW) on a batch of ``--batch-size`` pairs laid out
as training lays them out (``--source-tokens`` + ``--target-tokens`` columns). Variants,
each in its own process so that peak memory is its own:

- ``gpt2+ce`` (**the baseline**): ``GPT2LMHeadModel`` of the same size, cross-entropy on
  the target positions: plain GPT-2 fine-tuning;
- ``vaegpt+ce``: the same with VAEGPT-Sim's latents in every block (+ W_KL * KL): what the
  latent layers cost;
- ``vaegpt-sim``: the real training step: latents, Gumbel-softmax and the frozen GPT-2
  judge (:func:`cseaug.vaegpt.train.loss_on_batch`).

Each variant runs ``--repeats`` times, interleaved with the others; the median steps/s and
the largest peak are reported. Prints steps/s, pairs/s and peak memory (CUDA:
``torch.cuda.max_memory_allocated``; CPU: the process's peak resident set, which includes
the Python and library overhead of ~0.5 GiB) and each variant's ratio to the baseline.

Usage:
    python benchmarks/bench_vaegpt_train.py                        # GPT-2 size on CUDA, tiny on CPU
    python benchmarks/bench_vaegpt_train.py --size gpt2 --device cuda --precision auto --batch-size 32
    python benchmarks/bench_vaegpt_train.py --size gpt2 --device cpu --batch-size 4 --threads 1 --steps 3
    python benchmarks/bench_vaegpt_train.py --threads 1 --steps 50     # tiny on CPU, steady on a busy machine
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import time
from pathlib import Path
from typing import Any

from ratio import print_ratio

REPO = Path(__file__).resolve().parents[1]

SIZES: dict[str, dict[str, int]] = {
    "gpt2": {"n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024},
    "tiny": {
        "n_layer": 2,
        "n_embd": 64,
        "n_head": 2,
        "vocab_size": 1000,
        "n_positions": 256,
        "bos_token_id": 999,
        "eos_token_id": 999,
    },
}
VARIANTS = ("gpt2+ce", "vaegpt+ce", "vaegpt-sim")


def _batch(args: argparse.Namespace, vocab: int, device: Any) -> Any:
    import torch

    from cseaug.vaegpt.layout import PairBatch, positions

    generator = torch.Generator().manual_seed(0)
    source = torch.randint(0, vocab, (args.batch_size, args.source_tokens), generator=generator)
    target = torch.randint(0, vocab, (args.batch_size, args.target_tokens), generator=generator)
    ids = torch.cat([source, target], dim=1)
    mask = torch.ones_like(ids)
    return PairBatch(
        ids, mask, positions(mask), target, torch.ones_like(target), args.source_tokens
    ).to(device)


def measure(variant: str, args: argparse.Namespace) -> dict[str, Any]:
    """Time ``args.steps`` optimisation steps of one variant (after ``args.warmup`` untimed ones)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2Model

    from cseaug.devices import resolve_device, resolve_precision
    from cseaug.vaegpt.config import LossConfig
    from cseaug.vaegpt.loss import FrozenJudge
    from cseaug.vaegpt.model import VAEGPTSim
    from cseaug.vaegpt.train import loss_on_batch

    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(resolve_device(args.device, "--device"))
    precision = resolve_precision(args.precision, str(device))
    config = GPT2Config(**SIZES[args.size])
    batch = _batch(args, config.vocab_size, device)
    settings = LossConfig()
    if variant == "gpt2+ce":
        model = GPT2LMHeadModel(config).to(device)
    else:
        model = VAEGPTSim.from_config(config).to(device)
    judge = (
        FrozenJudge(GPT2Model(config)).to(device, dtype=getattr(torch, precision))
        if variant == "vaegpt-sim"
        else None
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-7)
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "float16")
    labels = batch.target_ids.flatten()

    def step() -> None:
        model.train()
        if judge is not None:
            loss = loss_on_batch(model, judge, batch, settings, precision).total
        else:
            with torch.autocast(
                device.type, getattr(torch, precision), enabled=precision != "float32"
            ):
                if variant == "gpt2+ce":
                    out = model(
                        input_ids=batch.input_ids,
                        attention_mask=batch.attention_mask,
                        position_ids=batch.position_ids,
                        logits_to_keep=batch.target_positions,
                    )
                    kl = 0.0
                else:
                    out = model(
                        batch.input_ids,
                        batch.attention_mask,
                        batch.position_ids,
                        logits_to_keep=batch.target_positions,
                    )
                    kl = settings.kl_weight * out.kl
                loss = (
                    torch.nn.functional.cross_entropy(out.logits.float().flatten(0, 1), labels) + kl
                )
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(args.warmup):
        step()
    sync()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    started, cpu_started = time.perf_counter(), time.process_time()
    for _ in range(args.steps):
        step()
    sync()
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device)
        memory_kind = "cuda max_memory_allocated"
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        memory_kind = "peak RSS"
    return {
        "variant": variant,
        "steps_per_second": args.steps / seconds,
        "pairs_per_second": args.steps * args.batch_size / seconds,
        "cpu_seconds_per_step": cpu_seconds / args.steps,
        "peak_memory_bytes": peak,
        "memory_kind": memory_kind,
        "device": str(device) if device.type == "cpu" else torch.cuda.get_device_name(device),
        "precision": precision,
        "parameters": sum(p.numel() for p in model.parameters()),
    }


ISSUE_13 = {"steps_per_second": 11.0, "time_ratio": 2.4, "memory_ratio": 1.48}
"""VAEGPT-Sim's training step before the fused loss and the half-precision judge (issue 13:
one H100 80GB, GPT-2 size, batch 32, bf16, 24 + 24 tokens): steps/s, and time and peak
memory as multiples of plain GPT-2 fine-tuning."""


def compare_with_issue_13(args: argparse.Namespace, sim: dict[str, Any], precision: str) -> None:
    """This run's vaegpt-sim against issue 13's figures, when the setting is the same."""
    same = (
        args.size == "gpt2"
        and args.batch_size == 32
        and (args.source_tokens, args.target_tokens) == (24, 24)
        and precision == "bfloat16"
        and sim["memory_kind"].startswith("cuda")
    )
    if not same:
        print(
            "issue 13's figures (H100, GPT-2 size, batch 32, bf16) are not comparable with this "
            "setting; on a GPU run: python benchmarks/bench_vaegpt_train.py"
        )
        return
    print(
        f"vaegpt-sim against issue 13 (before this code, H100): "
        f"{sim['steps_per_second']:.1f} steps/s vs {ISSUE_13['steps_per_second']} "
        f"({sim['steps_per_second'] / ISSUE_13['steps_per_second']:.2f}x; GPUs may differ: "
        f"{sim['device']}); time {sim['time_ratio_vs_baseline']:.2f}x vs "
        f"{ISSUE_13['time_ratio']}x and memory {sim['memory_ratio_vs_baseline']:.2f}x vs "
        f"{ISSUE_13['memory_ratio']}x of plain GPT-2 fine-tuning"
    )


def _child(variant: str, args: argparse.Namespace, queue: Any) -> None:
    sys.path.insert(0, str(REPO / "src"))
    queue.put(measure(variant, args))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--size", choices=sorted(SIZES), default=None, help="default: gpt2 on CUDA, tiny on CPU"
    )
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--precision", default="auto", choices=["auto", "float32", "bfloat16", "float16"]
    )
    parser.add_argument(
        "--batch-size", type=int, default=None, help="default: 32 (Table A1) on CUDA, 8 on CPU"
    )
    parser.add_argument("--source-tokens", type=int, default=24)
    parser.add_argument("--target-tokens", type=int, default=24)
    parser.add_argument(
        "--steps", type=int, default=None, help="timed steps; default 30 on CUDA, 20 on CPU"
    )
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of each variant (median steps/s reported)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (1 keeps CPU time honest on a busy machine)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()

    import torch

    cuda = args.device.startswith("cuda") or (args.device == "auto" and torch.cuda.is_available())
    args.size = args.size or ("gpt2" if cuda else "tiny")
    args.batch_size = args.batch_size or (32 if cuda else 8)
    args.steps = args.steps or (30 if cuda else 20)

    context = multiprocessing.get_context("spawn")
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    for _ in range(args.repeats):
        for variant in VARIANTS:  # interleaved, so that drifting load hits every variant alike
            queue = context.Queue()
            process = context.Process(target=_child, args=(variant, args, queue))
            process.start()
            runs[variant].append(queue.get())
            process.join()
            if process.exitcode != 0:
                raise SystemExit(f"variant {variant} failed (exit code {process.exitcode})")
    results = []
    for measured in runs.values():
        median = sorted(measured, key=lambda r: r["steps_per_second"])[len(measured) // 2]
        cpu = sorted(r["cpu_seconds_per_step"] for r in measured)[len(measured) // 2]
        results.append(
            {
                **median,
                "peak_memory_bytes": max(r["peak_memory_bytes"] for r in measured),
                "cpu_seconds_per_step": cpu,
                "steps_per_second_runs": [r["steps_per_second"] for r in measured],
            }
        )

    base = results[0]
    print(
        f"size={args.size} {SIZES[args.size]} batch={args.batch_size} tokens={args.source_tokens}+{args.target_tokens} "
        f"steps={args.steps} repeats={args.repeats} threads={args.threads or torch.get_num_threads()} device={base['device']} precision={base['precision']} torch={torch.__version__}"
    )
    print(
        f"{'variant':<12} {'params':>12} {'steps/s':>9} {'pairs/s':>9} {'cpu s/step':>10} {'peak MiB':>9} "
        f"{'time x':>7} {'cpu x':>6} {'mem x':>6}"
    )
    for r in results:
        r["time_ratio_vs_baseline"] = base["steps_per_second"] / r["steps_per_second"]
        r["cpu_ratio_vs_baseline"] = r["cpu_seconds_per_step"] / base["cpu_seconds_per_step"]
        r["memory_ratio_vs_baseline"] = r["peak_memory_bytes"] / base["peak_memory_bytes"]
        print(
            f"{r['variant']:<12} {r['parameters']:>12,} {r['steps_per_second']:>9.3f} {r['pairs_per_second']:>9.1f} "
            f"{r['cpu_seconds_per_step']:>10.3f} {r['peak_memory_bytes'] / 2**20:>9.0f} "
            f"{r['time_ratio_vs_baseline']:>7.2f} {r['cpu_ratio_vs_baseline']:>6.2f} {r['memory_ratio_vs_baseline']:>6.2f}"
        )
    print(
        f"baseline: gpt2+ce; memory: {base['memory_kind']}; 'time x' = baseline steps/s / variant steps/s; "
        "'cpu x' = CPU seconds per step / baseline's (steadier than wall time on a shared machine)"
    )
    print_ratio(
        f"vaegpt_{results[-1]['variant']}_vs_baseline_time",
        results[-1]["time_ratio_vs_baseline"],
        "baseline steps/s / variant steps/s",
    )
    compare_with_issue_13(args, results[-1], base["precision"])
    if args.json:
        args.json.write_text(
            json.dumps(
                {"args": vars(args) | {"json": str(args.json)}, "results": results}, indent=2
            )
        )


if __name__ == "__main__":
    main()
