"""Which beam count the MER band needs: the share of back-translations inside [0.15, 0.6] per beam count, and the time.

OssCSE gives no beam count (the config's default is 5). Fewer beams are faster; what matters
is whether the filter keeps the same share of sentences. For each beam count of ``--beams``
this runs :class:`~cseaug.augment.backtranslate.BackTranslator` (the stage's own code, both
pivots) over the same sentences and prints, per pivot, the share of candidates whose MER
lies in the band and their mean MER, the share of sentences kept (some pivot in the band),
the seconds, and both against the largest beam count of the run.

It needs the real WMT19 models (facebook/wmt19-en-de, -de-en, -en-ru, -ru-en): from the local
Hugging Face cache by name, or ``--models-dir`` holding directories named ``wmt19-en-de``
etc., and a GPU (float16); otherwise it prints SKIPPED with the command. ``--tiny`` runs the
same code on the CPU with tiny random models built here, only to exercise this script: the
shares are then meaningless (random translations have MER near 1.0, outside the band).

Usage:
    python benchmarks/bench_beams_mer.py --sentences 2000 --beams 1,2,3,4,5
    python benchmarks/bench_beams_mer.py --models-dir /models --sentences 2000
    python benchmarks/bench_beams_mer.py --tiny --sentences 16 --beams 1,2
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_bench import cuda_available, device_name, sentences, skipped  # noqa: E402
from ratio import print_ratio  # noqa: E402

MODELS = {
    "de": ("facebook/wmt19-en-de", "facebook/wmt19-de-en"),
    "ru": ("facebook/wmt19-en-ru", "facebook/wmt19-ru-en"),
}
BAND = (0.15, 0.6)


def real_pivots(models_dir: Path | None) -> dict[str, tuple[str, str]] | None:
    """The WMT19 pivots from ``models_dir`` or the local Hugging Face cache; None if absent."""
    from transformers import AutoConfig

    pivots = {}
    for pivot, names in MODELS.items():
        located = []
        for name in names:
            path = models_dir / name.split("/")[1] if models_dir else None
            candidate = str(path) if path is not None else name
            try:
                AutoConfig.from_pretrained(candidate, local_files_only=True)
            except OSError:
                return None
            located.append(candidate)
        pivots[pivot] = (located[0], located[1])
    return pivots


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--beams", default="1,2,3,4,5")
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--tiny", action="store_true", help="tiny random models on the CPU")
    args = parser.parse_args()
    command = (
        f"python benchmarks/bench_beams_mer.py --sentences {args.sentences} --beams {args.beams}"
    )

    from cseaug.augment.backtranslate import BackTranslator, backtranslation_stats

    texts = sentences(args.sentences)
    with tempfile.TemporaryDirectory() as tmp:
        if args.tiny:
            from tiny_fsmt import build_tiny_pivots

            pivots = build_tiny_pivots(Path(tmp))
            device, dtype = "cpu", "float32"
            print("--tiny: random models on the CPU; the shares below mean NOTHING about WMT19")
        else:
            if not cuda_available():
                skipped("the beam-count study on the real WMT19 models", command)
                return 0
            pivots = real_pivots(args.models_dir)
            if pivots is None:
                print(
                    "SKIPPED: the WMT19 models (facebook/wmt19-{en-de,de-en,en-ru,ru-en}) are neither "
                    "in the local Hugging Face cache nor in --models-dir. With them present run:"
                )
                print(f"    {command} [--models-dir DIR]")
                return 0
            device, dtype = "cuda", "float16"
        print(f"{len(texts)} sentences, {device_name(device)}, {dtype}, band {list(BAND)}")
        rows = []
        for beams in (int(b) for b in args.beams.split(",")):
            backtranslator = BackTranslator(
                pivots, mer_range=BAND, num_beams=beams, device=device, dtype=dtype
            )
            try:
                backtranslator.backtranslate(texts[:8])  # warm-up
                started = time.perf_counter()
                results = backtranslator.backtranslate(texts)
                seconds = time.perf_counter() - started
            finally:
                backtranslator.close()
            stats = backtranslation_stats(results)
            in_band = {
                pivot: sum(BAND[0] <= r.candidates[n].mer <= BAND[1] for r in results)
                / len(results)
                for n, pivot in enumerate(pivots)
            }
            rows.append((beams, seconds, stats["share_kept"], in_band, stats["mean_mer"]))
            print(f"  {beams} beam(s): {seconds:.1f} s, kept {stats['share_kept']:.3f}", flush=True)
    reference = max(rows, key=lambda row: row[0])
    print(
        f"\n{'beams':>5} {'seconds':>8} {'time x':>7} {'kept':>6} {'kept -ref':>9}  per pivot: in band / mean MER"
    )
    for beams, seconds, kept, in_band, mean_mer in rows:
        per_pivot = "  ".join(f"{p}: {in_band[p]:.3f} / {mean_mer[p]:.3f}" for p in in_band)
        print(
            f"{beams:>5} {seconds:>8.1f} {seconds / reference[1]:>7.2f} {kept:>6.3f} "
            f"{kept - reference[2]:>+9.3f}  {per_pivot}"
        )
    fewest = min(rows, key=lambda row: row[0])
    print_ratio(
        f"beams_{fewest[0]}_vs_{reference[0]}_time",
        fewest[1] / reference[1],
        "back-translation seconds",
    )
    print(
        f"reference: {reference[0]} beams (the largest of the run); 'kept': share of sentences with some pivot in the band"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
