"""The grid of NGCSE's Figure 7: MER and CS densities of positive and negative pairs, per setting.

NGCSE (appendix, "Match Error Rate and Cosine Similarity") plots, for each training setting
and for STS-B, the densities of MER and CS of positive and negative pairs. A setting is a
:class:`PairSet` from a dataset version (:func:`version_pairs`), STS-B (:func:`stsb_pairs`),
NLI triples (:func:`nli_pairs`) or the unsupervised views of a corpus
(:func:`unsupervised_pairs`, as NGCSE's tools but on words), capped at ``max_pairs`` pairs
per polarity with a seed (docs/diagnostics.md, "Commands").
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from cseaug.augment.generate_cse import shuffle_words
from cseaug.dataset.atomic import write_text_atomic
from cseaug.dataset.reader import iter_batches
from cseaug.diagnostics.views import seeded_sample, valid_positions
from cseaug.encoders.base import Encoder
from cseaug.errors import InputError
from cseaug.metrics.cosine import cosine_pairs
from cseaug.metrics.histograms import MetricValues, Panel, Series, plot_panels
from cseaug.metrics.mer import mer_pairs
from cseaug.progress import progress_bar
from cseaug.readers.benchmarks import read_nli_csv, read_sts_table

UNSUPERVISED_VIEWS: tuple[str, ...] = ("dropout", "token_shuffle", "token_cutoff")
POLARITY_COLORS = {"positive": "tab:blue", "negative": "tab:red"}
FIGURE_FILE = "figure7.png"
SUMMARY_FILE = "compare.json"


@dataclass
class PairSet:
    """Positive and negative (first, second) sentence pairs of one setting."""

    label: str
    positives: list[tuple[str, str]]
    negatives: list[tuple[str, str]]
    note: str = ""

    def __post_init__(self) -> None:
        if not self.positives and not self.negatives:
            raise InputError(
                f"setting '{self.label}' has no pairs: check its source and thresholds"
            )


def _cap(pairs: list[tuple[str, str]], max_pairs: int | None, seed: int) -> list[tuple[str, str]]:
    return [pairs[i] for i in seeded_sample(np.arange(len(pairs)), max_pairs, seed)]


def _random_partners(sentences: Sequence[str], seed: int) -> list[str]:
    """A different sentence for each sentence (a cyclic shift of a seeded permutation)."""
    if len(sentences) < 2:
        raise InputError("random negatives need at least two sentences")
    order = np.random.default_rng(seed).permutation(len(sentences))
    partner = np.empty(len(sentences), dtype=np.int64)
    partner[order] = np.roll(order, 1)
    return [sentences[j] for j in partner]


def stsb_pairs(
    path: str | Path,
    label: str = "STSB",
    positive_above: float = 4.0,
    negative_below: float = 1.0,
    max_pairs: int | None = 1000,
    seed: int = 0,
) -> PairSet:
    """STS-B (any :func:`~cseaug.readers.benchmarks.read_sts_table` file): score > 4 positive, < 1 negative."""
    rows = read_sts_table(path).select(["s1", "s2", "score"]).to_pylist()
    positives = [(r["s1"], r["s2"]) for r in rows if r["score"] > positive_above]
    negatives = [(r["s1"], r["s2"]) for r in rows if r["score"] < negative_below]
    note = f"score > {positive_above:g} positive, < {negative_below:g} negative"
    positives, negatives = _cap(positives, max_pairs, seed), _cap(negatives, max_pairs, seed + 1)
    return PairSet(label, positives, negatives, note)


def nli_pairs(
    path: str | Path, label: str = "NLI", max_pairs: int | None = 1000, seed: int = 0
) -> PairSet:
    """NLI triples (SimCSE csv ``sent0,sent1,hard_neg``): entailment positive, contradiction negative."""
    rows = read_nli_csv(path).select(["premise", "entailment", "contradiction"]).to_pylist()
    positives = [(r["premise"], r["entailment"]) for r in rows]
    negatives = [(r["premise"], r["contradiction"]) for r in rows if r["contradiction"] is not None]
    positives, negatives = _cap(positives, max_pairs, seed), _cap(negatives, max_pairs, seed + 1)
    return PairSet(label, positives, negatives, "entailment / contradiction")


def _sampled_pairs(
    directory: Path, column: str, max_pairs: int | None, seed: int
) -> list[tuple[str, str]]:
    """(sentence, column) of a seeded sample of the rows where ``column`` is set, streaming."""
    positions = seeded_sample(valid_positions(directory, [column]), max_pairs, seed)
    pairs: list[tuple[str, str]] = []
    offset = 0
    for batch in iter_batches(directory, columns=["sentence", column]):
        lo, hi = np.searchsorted(positions, [offset, offset + batch.num_rows])
        if hi > lo:
            index = pa.array(positions[lo:hi] - offset)
            table = pa.Table.from_batches([batch]).take(index)
            pairs += [(row["sentence"], row[column]) for row in table.to_pylist()]
        offset += batch.num_rows
    return pairs


def version_pairs(
    version_dir: str | Path, label: str | None = None, max_pairs: int | None = 1000, seed: int = 0
) -> PairSet:
    """A dataset version: (anchor, positive) and (anchor, negative) of a seeded sample of its rows.

    When no row has a negative view (SKICSE, Generate-CSE), negatives are random other
    anchors, as in unsupervised contrastive learning, and the note says so. Only the
    sampled rows are materialised, so a version of any size fits in memory.
    """
    directory = Path(version_dir)
    positives = _sampled_pairs(directory, "positive", max_pairs, seed)
    negatives = _sampled_pairs(directory, "negative", max_pairs, seed + 1)
    note = "anchor / positive and negative views"
    if not negatives and len(positives) > 1:
        anchors = [a for a, _ in positives]
        negatives = list(zip(anchors, _random_partners(anchors, seed), strict=True))
        note = "anchor / positive view; negatives are random other anchors"
    name = label or f"{directory.parent.name}/{directory.name}"
    return PairSet(name, positives, negatives, note)


def token_cutoff(words: list[str], ratio: float, rng: random.Random) -> list[str]:
    """``round(len(words) × ratio)`` random words removed, order kept (NGCSE's ``token_cutoff``, on words)."""
    positions = list(range(len(words)))
    rng.shuffle(positions)
    kept = sorted(positions[round(len(words) * ratio) :])
    return [words[i] for i in kept]


def read_corpus_lines(path: str | Path) -> list[str]:
    """Non-empty stripped lines of a text file (one sentence per line)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"corpus file not found: {file} (expected one sentence per line)")
    lines = [line.strip() for line in file.read_text(encoding="utf-8").split("\n")]
    return [line for line in lines if line]


def unsupervised_pairs(
    corpus: str | Path | Sequence[str],
    label: str = "Wiki",
    views: Sequence[str] = UNSUPERVISED_VIEWS,
    cutoff_ratio: float = 0.05,
    max_pairs: int | None = 1000,
    seed: int = 0,
) -> list[PairSet]:
    """One setting per unsupervised view of a corpus: ``<label>.dropout``, ``.token_shuffle``, ``.token_cutoff``.

    Args:
        corpus: a text file (one sentence per line) or the sentences.
        label: prefix of the settings' labels (NGCSE: Wiki, NLI).
        views: which of :data:`UNSUPERVISED_VIEWS`.
        cutoff_ratio: share of words removed by ``token_cutoff`` (NGCSE: 0.05).
        max_pairs: sentences used (a seeded sample).
        seed: seed of the sample, the transformations and the random negatives.
    """
    unknown = [v for v in views if v not in UNSUPERVISED_VIEWS]
    if unknown:
        raise InputError(
            f"unknown unsupervised view(s) {unknown}; choose from {list(UNSUPERVISED_VIEWS)}"
        )
    sentences = read_corpus_lines(corpus) if isinstance(corpus, (str, Path)) else list(corpus)
    pairs = _cap([(s, s) for s in sentences], max_pairs, seed)
    chosen = [s for s, _ in pairs]
    negatives = list(zip(chosen, _random_partners(chosen, seed), strict=True))
    out = []
    for view in views:
        rng = random.Random(f"{seed}:{view}")
        if view == "dropout":
            positives = [(s, s) for s in chosen]
            note = "identical sentence"
        elif view == "token_shuffle":
            positives = [(s, shuffle_words(s, rng)) for s in chosen]  # NGCSE's token_shuffle
            note = "words shuffled"
        else:
            positives = [(s, " ".join(token_cutoff(s.split(), cutoff_ratio, rng))) for s in chosen]
            note = f"round(n × {cutoff_ratio:g}) words removed"
        out.append(
            PairSet(
                f"{label}.{view}", positives, negatives, f"{note}; negatives: random other sentence"
            )
        )
    return out


@dataclass
class SettingStats:
    """MER and CS values of the positive and negative pairs of one setting."""

    label: str
    note: str
    values: dict[str, dict[str, MetricValues]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "note": self.note,
            **{
                polarity: {metric: v.summary() for metric, v in metrics.items()}
                for polarity, metrics in self.values.items()
            },
        }


def setting_stats(
    pairs: PairSet, encoder: Encoder, mer_bins: int = 40, cs_bins: int = 80
) -> SettingStats:
    """MER and CS of every pair of a setting, on the shared bins."""
    stats = SettingStats(pairs.label, pairs.note)
    for polarity, items in (("positive", pairs.positives), ("negative", pairs.negatives)):
        first = [a for a, _ in items]
        second = [b for _, b in items]
        mer = MetricValues("mer", mer_bins)
        mer.add(mer_pairs(first, second))
        cs = MetricValues("cs", cs_bins)
        cs.add(cosine_pairs(first, second, encoder))
        stats.values[polarity] = {"mer": mer, "cs": cs}
    return stats


def compare(
    settings: Sequence[PairSet],
    out_dir: str | Path,
    encoder: Encoder,
    *,
    mer_bins: int = 40,
    cs_bins: int = 80,
    per_row: int = 2,
    title: str | None = "MER and CS of positive and negative pairs (as NGCSE, Figure 7)",
) -> tuple[Path, Path]:
    """Draw the Figure 7 grid of ``settings`` and write its statistics.

    Each setting gets two panels side by side, MER and CS, each overlaying the densities
    of its positive and negative pairs; ``per_row`` settings share a row of the figure.

    Returns:
        The paths of ``figure7.png`` and ``compare.json`` in ``out_dir``.
    """
    if not settings:
        raise InputError(
            "compare needs at least one setting (a version, --stsb, --nli or --corpus)"
        )
    if per_row < 1:
        raise InputError(f"per_row must be at least 1, got {per_row}")
    computed: list[SettingStats] = []
    with progress_bar("Comparing settings", total=len(settings), unit="settings") as bar:
        for pairs in settings:
            computed.append(setting_stats(pairs, encoder, mer_bins, cs_bins))
            bar.advance()
    panels: list[Panel | None] = []
    for stats in computed:
        for metric in ("mer", "cs"):
            histograms = {p: stats.values[p][metric].histogram for p in POLARITY_COLORS}
            series = [Series(p, h, POLARITY_COLORS[p]) for p, h in histograms.items() if h.n]
            panels.append(Panel(f"{stats.label}: {metric.upper()}", metric, series))
    width = 2 * per_row  # panels in a row of the figure
    grid = [panels[start : start + width] for start in range(0, len(panels), width)]
    out = Path(out_dir)
    figure = plot_panels(grid, out / FIGURE_FILE, title=title)
    summary = {
        "encoder": getattr(encoder, "name", None),
        "bins": {"mer": mer_bins, "cs": cs_bins},
        "settings": [s.to_dict() for s in computed],
    }
    summary_path = out / SUMMARY_FILE
    write_text_atomic(summary_path, json.dumps(summary, indent=2) + "\n")
    return figure, summary_path
