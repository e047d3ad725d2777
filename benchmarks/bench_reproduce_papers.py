"""The trainer against the papers' own STS tables: SimCSE first, then each paper's objective.

1. **SimCSE-unsup** on the Wikipedia sentences of ``../shared/data`` (11,914 of SimCSE's
   1,000,000) and **SimCSE-sup** on its SNLI triples (5,883 dev/test triples; SimCSE trained
   on 275,601 SNLI + MultiNLI triples), each published as a version the way ``cseaug build``
   does (a ``generate_cse`` build without generator: the build samples one sentence for a
   random view, every other sentence or triple is published as given, nothing held out),
   trained with ``configs/train/simcse-{unsup,sup}.yaml`` (BERT-base, [CLS]) and scored on
   the seven STS sets, printed beside the numbers of SimCSE's Table 5 (BERT-base).
2. **Each paper's objective** on a version built with its config, named with
   ``--version OBJECTIVE=NAME/vNNNN`` (e.g. ``ngcse=wiki-sts/v0001``; these builds need an
   LLM): trained with ``configs/train/<objective>.yaml`` (NGCSE: its "Final Performance"
   preset ``ngcse-{wiki,nli}-sts-ht-final.yaml``, the setting of its Table 1) and printed
   beside the paper's BERT-base table (NGCSE Table 1, OssCSE Table 4, SKICSE Table 1,
   VAEGPT-Sim Table 4).

Every run keeps the checkpoint best on STS-B dev, as the papers. Each table says the scale
it ran at and the paper's, and the gap per set. ``--scale cpu`` (the default) is a CPU-sized
smoke run (``--steps`` steps, ``--eval-pairs`` pairs per test set); ``--scale paper`` runs
the configs' recipes on all the rows and all the pairs, which wants a GPU; the data here is
still smaller than the papers' (the gap is stated).

A pretrained BERT-base is required (``--model``: a Hugging Face id in the local cache or
reachable on the hub, or a local directory): randomly initialised weights say nothing about
the papers, so without one the benchmark refuses (exit status 2). ``--not-of-record-tiny-model
DIR`` runs the same code on a tiny model for the tests; its output says, first and last,
that it is not the benchmark of record.

Usage:
    python benchmarks/bench_reproduce_papers.py                          # CPU-sized, BERT-base cached
    python benchmarks/bench_reproduce_papers.py --scale paper --device cuda \\
        --version ngcse=wiki-sts/v0001 --version osscse=wiki-osscse/v0001 --root storage
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratio import print_ratio

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
WIKI = SHARED / "wiki" / "wiki1m_for_simcse_first11914.txt"
SNLI = SHARED / "nli" / "nli_triples_snli_devtest.csv"
SETS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R")
NOT_OF_RECORD = (
    "NOT THE BENCHMARK OF RECORD: a tiny test model (--not-of-record-tiny-model); these "
    "numbers say nothing about the papers"
)


@dataclass(frozen=True)
class Reference:
    """A paper's printed Spearman x100 for one setting, and which aggregate it is."""

    source: str
    aggregate: str  # "all" (SentEval's pooled Spearman) or "wmean"
    scores: dict[str, float]
    avg: float
    scale: str


def _scores(*values: float, sets: tuple[str, ...] = SETS) -> dict[str, float]:
    return dict(zip(sets, values, strict=True))


SIX = SETS[:6]
REFERENCES: dict[str, Reference] = {
    "simcse-unsup": Reference(
        "SimCSE (Gao et al., 2021), Table 5, unsup-SimCSE-BERT-base",
        "all",
        _scores(68.40, 82.41, 74.38, 80.91, 78.56, 76.85, 72.23),
        76.25,
        "1,000,000 Wikipedia sentences, batch 64, 1 epoch (15,625 steps), all pairs",
    ),
    "simcse-sup": Reference(
        "SimCSE (Gao et al., 2021), Table 5, sup-SimCSE-BERT-base",
        "all",
        _scores(75.30, 84.67, 80.19, 85.40, 80.82, 84.25, 80.39),
        81.57,
        "275,601 SNLI+MNLI triples, batch 512, 3 epochs (~1,600 steps), all pairs",
    ),
    "ngcse-wiki": Reference(
        "NGCSE Table 1, WikiSTS-HT (BERT-base; mean of 3 seeds, PromptBERT representation)",
        "all",
        _scores(72.46, 84.88, 77.80, 83.85, 81.11, 81.90, 76.56),
        79.79,
        "Wikipedia 1M + 20,000 generated rows, batch 256, 1 epoch, all pairs",
    ),
    "ngcse-nli": Reference(
        "NGCSE Table 1, NLISTS-HT (BERT-base; mean of 3 seeds, PromptBERT representation)",
        "all",
        _scores(72.94, 84.32, 77.71, 84.20, 80.85, 82.21, 78.04),
        80.02,
        "NLI premises + 20,000 generated rows, batch 256, 3 epochs, all pairs",
    ),
    "osscse": Reference(
        "OssCSE Table 4, OssCSE-BERT-base (PromptBERT representation)",
        "all",
        _scores(71.78, 84.40, 77.71, 83.95, 79.92, 80.57, 75.25),
        79.08,
        "Wikipedia 1M with back-translations and negations, batch 64, 2 epochs, all pairs",
    ),
    "skicse-unsup": Reference(
        "SKICSE Table 1, unsupervised SKICSE (BERT-base)",
        "all",
        _scores(72.92, 84.11, 76.81, 82.18, 80.45, 80.69, 73.38),
        78.65,
        "Wikipedia sentences with LLaMA2-7B knowledge, batch 512, 1 epoch, all pairs",
    ),
    "skicse-sup": Reference(
        "SKICSE Table 1, supervised SKICSE (BERT-base)",
        "all",
        _scores(75.79, 86.14, 81.47, 86.13, 82.05, 85.08, 80.48),
        82.45,
        "NLI quadruplets with LLaMA2-7B knowledge, batch 512, 3 epochs, all pairs",
    ),
    "generate-cse": Reference(
        "VAEGPT-Sim Table 4, Generate-CSE-VAEGPT-Sim-BERT-base (wmean; no SICK-R)",
        "wmean",
        _scores(68.54, 77.96, 74.52, 79.50, 79.87, 78.15, sets=SIX),
        76.42,
        "~70,000 in-domain STS sentences, batch 96, views from VAEGPT-Sim, all pairs",
    ),
}
"""The papers' BERT-base numbers, as printed (x100); avg is the paper's own Avg. column."""


def _ngcse_corpus(version: str) -> str:
    return "nli" if Path(version).parent.name.startswith("nli") else "wiki"


def reference_for(objective: str, version: str) -> Reference:
    """The reference of ``objective``; NGCSE's by the version's corpus (wiki-* or nli-*)."""
    if objective == "ngcse":
        return REFERENCES[f"ngcse-{_ngcse_corpus(version)}"]
    return REFERENCES[objective]


def config_for(objective: str, version: str) -> Path:
    """The training config of ``objective``: NGCSE's Table 1 is its "Final Performance"
    setting, ``ngcse-{wiki,nli}-sts-ht-final.yaml``; the others' own config."""
    name = f"ngcse-{_ngcse_corpus(version)}-sts-ht-final" if objective == "ngcse" else objective
    return REPO / "configs" / "train" / f"{name}.yaml"


def pretrained_problem(model: str) -> str | None:
    """Why ``model`` is no pretrained encoder here (the trainer's own check), or None."""
    from cseaug.commands.train import check_model
    from cseaug.errors import ConfigError

    try:
        check_model(model)
    except ConfigError as error:
        return str(error)
    return None


def build_version(root: Path, name: str, corpus: dict[str, Any]) -> Path:
    """A version of ``corpus`` published by a ``generate_cse`` build without generator: one
    sampled sentence gets a random view, every other row is published as given."""
    from cseaug.config import RunConfig
    from cseaug.pipeline.local import run_build

    cfg = RunConfig.model_validate(
        {
            "name": name,
            "method": "generate_cse",
            "corpus": corpus,
            "sample": {"size": 1, "seed": 0},
            "generate_cse": {"views": 1, "seed": 0},
            "output": {"root": str(root), "heldout_fraction": 0.0},
            "diagnostics": {"enabled": False},
        }
    )
    return run_build(cfg).version_dir


def overrides(args: argparse.Namespace, model: str) -> list[str]:
    """The ``--set`` values of a run at ``args.scale``."""
    common = [f"model={model}", f"evaluation.data_dir={SHARED}", f"device={args.device}",
              "evaluation.before=false"]  # fmt: skip
    if args.threads:
        common.append(f"torch_threads={args.threads}")
    if args.scale == "paper":
        return common
    return [*common, f"max_steps={args.steps}", f"batch_size={args.batch_size}",
            f"evaluation.max_pairs={args.eval_pairs}",
            f"evaluation.eval_steps={max(1, args.steps // 2)}"]  # fmt: skip


def scale_line(record: dict[str, Any], cfg: Any, reference: Reference) -> str:
    """What ran here, next to the paper's scale."""
    rows = sum(record["training_rows"].values())
    pairs = cfg.evaluation.max_pairs
    shown = "all pairs" if pairs is None else f"{pairs} pairs per test set"
    return (
        f"scale here: {rows:,} training rows of {record['dataset']}, {record['steps']} steps of "
        f"batch {cfg.batch_size}, {shown}, {cfg.model} on {record['device']} "
        f"{record['precision']}; scores of the checkpoint of step {record['selection']['step']}\n"
        f"paper's scale: {reference.scale}"
    )


def comparison(record: dict[str, Any], reference: Reference) -> tuple[str, float]:
    """The table of paper vs here (x100) per set, with the gap, and the avg here."""
    after = record["scores"]["after"]
    senteval = record["scores"]["senteval"]["after"]
    lines = [f"| set | paper ({reference.aggregate}) | here | gap |", "|---|---:|---:|---:|"]
    ours = []
    for name, paper in reference.scores.items():
        value = 100 * (senteval[name][reference.aggregate] if name in senteval else after[name])
        ours.append(value)
        lines.append(f"| {name} | {paper:.2f} | {value:.2f} | {value - paper:+.2f} |")
    avg = sum(ours) / len(ours)
    lines.append(f"| avg | {reference.avg:.2f} | {avg:.2f} | {avg - reference.avg:+.2f} |")
    return "\n".join(lines), avg


def run(objective: str, version: Path, args: argparse.Namespace, model: str, out: Path) -> None:
    """Train ``objective`` on ``version`` and print it beside its paper's table."""
    from cseaug.trainer.config import load_train_config
    from cseaug.trainer.train import train_encoder

    reference = reference_for(objective, str(version))
    cfg = load_train_config(config_for(objective, str(version)), overrides(args, model))
    record = train_encoder(version, cfg, out / objective, say=print).record
    table, avg = comparison(record, reference)
    print(f"\n=== {objective}: {reference.source} (Spearman x100)")
    print(scale_line(record, cfg, reference))
    print(table)
    print_ratio(f"reproduce_{objective}_avg", avg / reference.avg, "avg here / paper's avg")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="bert-base-uncased", help="pretrained BERT-base")
    parser.add_argument("--scale", choices=("cpu", "paper"), default="cpu")
    parser.add_argument("--steps", type=int, default=20, help="--scale cpu: training steps")
    parser.add_argument("--batch-size", type=int, default=32, help="--scale cpu: batch size")
    parser.add_argument(
        "--eval-pairs", type=int, default=300, help="--scale cpu: pairs per test set"
    )
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--threads", type=int, default=None, help="torch threads on CPU")
    parser.add_argument("--version", action="append", default=[], metavar="OBJECTIVE=NAME/vNNNN",
                        help="also train a paper's objective on a version built with its config")  # fmt: skip
    parser.add_argument("--root", default="storage", help="output root of the --version builds")
    parser.add_argument("--workdir", type=Path, default=None, help="where versions and models go")
    parser.add_argument("--not-of-record-tiny-model", type=Path, default=None,
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args(argv)
    from cseaug.dataset import versions

    tiny = args.not_of_record_tiny_model
    if tiny is not None:
        print(NOT_OF_RECORD)
        model = str(tiny)
    else:
        model = args.model
        problem = pretrained_problem(model)
        if problem:
            print(
                f"error: no pretrained BERT-base here: {problem}. Randomly initialised weights "
                "are not acceptable for this benchmark; run it where the model is cached "
                "(`hf download bert-base-uncased`) or pass --model DIR",
                file=sys.stderr,
            )
            return 2
    paper_runs = []
    for item in args.version:
        objective, _, name = item.partition("=")
        if objective not in REFERENCES and objective != "ngcse":
            parser.error(f"--version {item}: unknown objective '{objective}'")
        paper_runs.append((objective, versions.resolve(args.root, name)))
    with tempfile.TemporaryDirectory(prefix="bench-reproduce-") as scratch:
        work = args.workdir or Path(scratch)
        wiki = build_version(work, "wiki-shared", {"name": "wiki", "path": str(WIKI)})
        snli = build_version(
            work,
            "snli-triples",
            {"name": "snli", "path": str(SNLI), "format": "csv", "text_column": "sent0",
             "view_columns": {"positive": "sent1", "negative": "hard_neg"}},
        )  # fmt: skip
        run("simcse-unsup", wiki, args, model, work / "models")
        run("simcse-sup", snli, args, model, work / "models")
        for objective, version in paper_runs:
            run(objective, version, args, model, work / "models")
    if tiny is not None:
        print(NOT_OF_RECORD)
    return 0


if __name__ == "__main__":
    sys.exit(main())
