"""How many rows the cosine-similarity pass needs: error of the median and quartiles by sample size.

The diagnostics report each view's cosine similarity to its anchor by its quartiles and a
histogram of 0.025-wide bins (NGCSE, Figure 7), computed on a seeded sample of
``diagnostics.cs_sample`` rows. This measures what a smaller sample costs in accuracy: real
sentence triples (SNLI dev/test from ../shared/data: an anchor, its entailment as a positive
view, its contradiction as a negative view) are embedded once with the default encoder;
then, for each sample size, ``--draws`` samples of rows are drawn as a build draws its CS
sample (the rows of smallest key, a hash of the seed and the row's id:
``cseaug.diagnostics.views.cs_keys``; draw k uses seed k) and the absolute error of their
q1 / median / q3 against the whole set's is recorded, per view.

Prints, per size, the 95th percentile of the error over the draws (the worst of the three
statistics and the two views), in CS units and in histogram bins, and the encoding time the
size costs. Samples of a finite set vary less than samples of a large version: each error is
also given scaled by 1 / sqrt(1 - size / rows) (the finite-population correction), the
estimate for a version much larger than the sample. RATIO: that estimate at the default
cs_sample, in bins (target < 0.5: a quartile is off by less than half a histogram bar).

    python benchmarks/bench_cs_sample.py [--rows 5884] [--draws 200]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np
from ratio import print_ratio

REPO = Path(__file__).resolve().parents[1]
NLI = REPO.parent / "shared" / "data" / "nli" / "nli_triples_snli_devtest.csv"
SIZES = (250, 500, 1000, 2000, 3000, 4000)
BIN = 0.025


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=6000, help="triples embedded (the population)")
    parser.add_argument("--draws", type=int, default=200, help="samples drawn per size")
    args = parser.parse_args()
    if not NLI.is_file():
        print(f"SKIPPED: {NLI} is not there (the shared data)")
        return 0

    from cseaug.config import DiagnosticsConfig
    from cseaug.dataset.schema import row_id
    from cseaug.diagnostics.views import cs_keys
    from cseaug.encoders.loading import encoder_from_config

    with NLI.open(encoding="utf-8", newline="") as handle:
        triples = [(r["sent0"], r["sent1"], r["hard_neg"]) for r in csv.DictReader(handle)]
    triples = triples[: args.rows]
    cfg = DiagnosticsConfig()
    default = cfg.cs_sample
    encoder = encoder_from_config(cfg)
    started = time.perf_counter()
    anchors, positives, negatives = (encoder.encode([t[i] for t in triples]) for i in range(3))
    seconds = time.perf_counter() - started
    per_sentence = seconds / (3 * len(triples))
    cs = {
        "positive": np.einsum("ij,ij->i", anchors, positives),
        "negative": np.einsum("ij,ij->i", anchors, negatives),
    }
    truth = {view: np.quantile(values, [0.25, 0.5, 0.75]) for view, values in cs.items()}
    n = len(triples)
    ids = [row_id("snli", t[0] + "\t" + str(i)) for i, t in enumerate(triples)]
    orders = [np.argsort(cs_keys(ids, seed)) for seed in range(args.draws)]  # as a build draws
    print(
        f"{n:,} SNLI triples embedded with {cfg.encoder} in {seconds:.1f} s "
        f"({1 / per_sentence:.0f} sentences/s); quartiles of the whole set: "
        + "; ".join(f"{v} {' / '.join(f'{q:.3f}' for q in truth[v])}" for v in cs)
    )
    print(
        f"{'rows':>6} {'p95 error':>10} {'in bins':>8} {'large version':>14} {'in bins':>8} "
        f"{'encoding s':>11}"
    )
    worst_at: dict[int, float] = {}
    for size in [s for s in SIZES if s < n]:
        errors = []
        for order in orders:
            rows = order[:size]
            errors.append(
                max(
                    float(np.max(np.abs(np.quantile(values[rows], [0.25, 0.5, 0.75]) - truth[v])))
                    for v, values in cs.items()
                )
            )
        p95 = float(np.percentile(errors, 95))
        large = p95 / np.sqrt(1 - size / n)
        worst_at[size] = large
        print(
            f"{size:>6} {p95:>10.4f} {p95 / BIN:>8.2f} {large:>14.4f} {large / BIN:>8.2f} "
            f"{4 * size * per_sentence:>11.1f}"
        )
    print("(encoding s: anchor + 3 views per row at the rate above)")
    if default in worst_at:
        print_ratio(
            f"cs_sample_{default}_p95_quartile_error_in_bins",  # estimate for a large version
            worst_at[default] / BIN,
            "target < 0.5",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
