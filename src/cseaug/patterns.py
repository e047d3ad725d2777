"""The fixed in-context examples of NGCSE's pattern simulation ("Pattern Simulation with LLM",
step 1, and appendix "Details of the Prompt"): k sentence pairs per level, drawn once from a
pattern source (docs/prompts-and-patterns.md, "Pattern sources and the example draw").

Example:
    >>> from cseaug.config import PatternConfig
    >>> examples = load_examples(PatternConfig(source="paper"), "nli")
    >>> examples.levels["negative"][2]
    ('A black and white dog is running through a snowy field.', 'The dog is taking a nap.')
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from cseaug.config import PatternConfig
from cseaug.errors import ConfigError
from cseaug.hashing import file_sha256
from cseaug.readers.benchmarks import (
    nli_triples,
    read_nli_csv,
    read_snli_senteval,
    read_sts_dir,
    read_sts_table,
    source_info,
)

PatternKind = Literal["sts", "nli"]
Pair = tuple[str, str]

STS_LEVELS: tuple[str, ...] = ("positive", "intermediate", "negative")
NLI_LEVELS: tuple[str, ...] = ("positive", "negative")
LEVELS: dict[str, tuple[str, ...]] = {"sts": STS_LEVELS, "nli": NLI_LEVELS}
"""Levels of each pattern kind; they are also the names of the views they generate."""


# Verbatim from the appendix (only the text extraction's "\\$" escape undone): the examples
# the paper's prompts showed. tests/test_prompts.py checks them against the paper's text.
PAPER_EXAMPLES: dict[str, dict[str, tuple[Pair, ...]]] = {
    "nli": {
        "positive": (
            (
                "Over the years these bags have proved so handy that to keep up with demand the local "
                "supply of genuine handmade bags has been augmented with imported goods.",
                "These genuine handmade bags are very useful and in demand.",
            ),
            (
                "Advocates worry that if substantial numbers of welfare mothers are pushed into jobs, "
                "centers might be swamped by demands to serve as many as a million added kids.",
                "Centers are only capable of serving a limited number of kids.",
            ),
            (
                "A black and white dog is running through a snowy field.",
                "A black and white dog is outside.",
            ),
        ),
        "negative": (
            (
                "Over the years these bags have proved so handy that to keep up with demand the local "
                "supply of genuine handmade bags has been augmented with imported goods.",
                "The bags are known for falling apart and people are looking for an alternative.",
            ),
            (
                "Advocates worry that if substantial numbers of welfare mothers are pushed into jobs, "
                "centers might be swamped by demands to serve as many as a million added kids.",
                "If welfare mothers get jobs, it decreases the number of kids that centers need to serve.",
            ),
            (
                "A black and white dog is running through a snowy field.",
                "The dog is taking a nap.",
            ),
        ),
    },
    "sts": {
        "positive": (
            (
                "U.S. prosecutors have arrested more than 130 individuals and have seized more than "
                "$17 million in a Continuing crackdown on Internet fraud and abuse.",
                "More than 130 people have been arrested and $17 million worth of property seized in "
                "an Internet fraud sweep announced Friday by three U.S. government agencies.",
            ),
            (
                "The hearing occurred a day after the Pentagon for the first time singled out an "
                "officer, Dallager, for not addressing the scandal.",
                "The hearing came one day after the Pentagon for the first time singled out an "
                "officer - Dallager - for failing to address the scandal.",
            ),
            (
                "The Bush administration blames Hussein loyalists and foreign Muslim militants who "
                "have entered Iraq to fight U.S. troops for the wave of bombings and guerrilla attacks.",
                "The Bush administration blames the wave of bombings and guerrilla attacks on Saddam "
                "loyalists and foreign Muslim militants who have entered Iraq to fight U.S. troops.",
            ),
        ),
        "intermediate": (
            (
                "Police launched an international hunt for Shevaun Pennington after she ran away "
                "with a 31-year-old Toby Studabaker Saturday.",
                "Shevaun Pennington disappeared on Saturday morning after arranging to meet "
                "31-year-old Toby Studebaker.",
            ),
            (
                "In a news release Thursday, Strayhorn said this was the first time a comptroller "
                "rejected a budget.",
                "Strayhorn said it was the first time in Texas history a computer-roller had not "
                "certified the appropriate actions act.",
            ),
            (
                'The Korean Air deal is expected to be finalized "in the next several weeks," '
                "Boeing spokesman Bob Saling said.",
                "Boeing said the final agreement is expected to be signed during the next few weeks.",
            ),
        ),
        "negative": (
            (
                "Monkeypox is usually found only in central and western Africa.",
                "Prairie dogs, usually found in southwestern and western states aren't indigenous "
                "to Wisconsin.",
            ),
            (
                "The tech-laced Nasdaq Composite Index gained 2.90 points, or 0.18 percent, to 1,606.87.",
                "At 12:10 p.m. EDT, Canada's benchmark S&P/TSX composite index was up 6.87 points or "
                "0.1 percent to 6,979.29.",
            ),
            ("A man is playing the drums.", "A woman is slicing some leaves."),
        ),
    },
}


@dataclass(frozen=True)
class ExampleSet:
    """The fixed in-context examples of one run: level -> k (sentence1, sentence2) pairs in
    prompt order, the ``patterns.source`` and ``path`` (None for ``paper``) they came from, the
    sha256 of every file read, the seed of the draw and each level's distinct candidates."""

    kind: PatternKind
    levels: Mapping[str, tuple[Pair, ...]]
    source: str
    path: str | None
    files: Mapping[str, str]
    seed: int
    candidates: Mapping[str, int]

    def as_manifest(self) -> dict[str, Any]:
        """JSON-able record of the examples and where they came from (for manifest.json)."""
        record = {name: value for name, value in asdict(self).items() if name != "levels"}
        examples = {level: [list(pair) for pair in pairs] for level, pairs in self.levels.items()}
        return {**record, "examples": examples}


def draw(candidates: Iterable[tuple[str, ...]], k: int, seed: int) -> list[tuple[str, ...]]:
    """The k candidates first in the order of ``sha256(seed, fields...)``, duplicates once: the
    same on every machine, whatever the input order.

    Example:
        >>> draw([("a", "b"), ("c", "d"), ("a", "b")], k=5, seed=0) == draw([("c", "d"), ("a", "b")], k=5, seed=0)
        True
    """

    def rank(item: tuple[str, ...]) -> str:
        return hashlib.sha256("\x00".join((str(seed), *item)).encode()).hexdigest()

    return sorted(set(candidates), key=rank)[:k]


def _source_path(cfg: PatternConfig) -> Path:
    if cfg.path is None:
        raise ConfigError(f"patterns.path is required for patterns.source '{cfg.source}'")
    path = Path(cfg.path)
    if not path.exists():
        raise ConfigError(f"patterns.path {path} does not exist (patterns.source '{cfg.source}')")
    return path


def _read_source(cfg: PatternConfig, path: Path) -> tuple[pa.Table, list[str]]:
    """The source as a table of STS pairs or NLI triples, and the files read."""
    if cfg.source == "sts12":
        table = read_sts_dir(path)
    elif cfg.source == "sts_table":
        table = read_sts_table(path, cfg.columns)
    elif cfg.source == "nli_csv":
        table = read_nli_csv(path)
    else:
        splits = sorted(p.name[len("labels.") :] for p in path.glob("labels.*"))
        if not splits:
            raise ConfigError(
                f"patterns.path {path} must be the directory of SentEval's s1/s2/labels files "
                "(it holds no labels.<split> file)"
            )
        pairs = [read_snli_senteval(path, split) for split in splits]
        files = [f for t in pairs for f in source_info(t)["files"]]
        return pa.concat_tables([nli_triples(t) for t in pairs]), files
    return table, source_info(table)["files"]


Levels = dict[str, tuple[Pair, ...]]
"""Level -> its drawn example pairs (:attr:`ExampleSet.levels`)."""


def _sts_examples(table: pa.Table, cfg: PatternConfig) -> tuple[Levels, dict[str, int]]:
    low, high = cfg.intermediate_range
    if low > high:
        raise ConfigError(
            f"patterns.intermediate_range {cfg.intermediate_range} is empty (low > high)"
        )
    levels: dict[str, list[Pair]] = {level: [] for level in STS_LEVELS}
    for row in table.select(["s1", "s2", "score"]).to_pylist():
        if not row["s1"] or not row["s2"]:
            continue
        pair = (row["s1"], row["s2"])
        score = row["score"]
        if score > cfg.positive_min_score:
            levels["positive"].append(pair)
        if low <= score <= high:
            levels["intermediate"].append(pair)
        if score < cfg.negative_max_score:
            levels["negative"].append(pair)
    candidates = {level: len(set(pairs)) for level, pairs in levels.items()}
    short = {level: n for level, n in candidates.items() if n < cfg.k}
    if short:
        raise ConfigError(
            f"pattern source {Path(cfg.path)} has too few candidates for level(s) "  # type: ignore[arg-type]
            + ", ".join(f"'{level}' ({n} < k={cfg.k})" for level, n in short.items())
            + f"; candidates per level: {candidates}. Widen the score thresholds or use another source."
        )
    drawn = {level: tuple(draw(pairs, cfg.k, cfg.seed)) for level, pairs in levels.items()}
    if cfg.intermediate_order == "longer-first":  # the same pairs, the longer one Sentence 1
        drawn["intermediate"] = tuple(
            (a, b) if len(a.split()) >= len(b.split()) else (b, a) for a, b in drawn["intermediate"]
        )
    return drawn, candidates  # type: ignore[return-value]


def _nli_examples(table: pa.Table, cfg: PatternConfig) -> tuple[Levels, dict[str, int]]:
    triples = [
        (r["premise"], r["entailment"], r["contradiction"])
        for r in table.to_pylist()
        if r["premise"] and r["entailment"] and r["contradiction"]
    ]
    count = len(set(triples))
    if count < cfg.k:
        raise ConfigError(
            f"pattern source {cfg.path} has {count} complete NLI triples (premise, entailment, "
            f"contradiction) but patterns.k is {cfg.k}: levels 'positive' and 'negative' need k each"
        )
    chosen = draw(triples, cfg.k, cfg.seed)
    levels = {
        "positive": tuple((p, e) for p, e, _ in chosen),
        "negative": tuple((p, c) for p, _, c in chosen),
    }
    return levels, {"positive": count, "negative": count}


def _paper_examples(cfg: PatternConfig, kind: PatternKind) -> tuple[Levels, dict[str, int]]:
    printed = PAPER_EXAMPLES[kind]
    if cfg.k > 3:
        raise ConfigError(
            f"patterns.source 'paper' prints 3 examples per level; patterns.k is {cfg.k}"
        )
    levels = {level: pairs[: cfg.k] for level, pairs in printed.items()}
    return levels, {level: len(pairs) for level, pairs in printed.items()}


def load_examples(cfg: PatternConfig, kind: PatternKind) -> ExampleSet:
    """Draw ``cfg.k`` examples per level from the pattern source of ``cfg`` for ``kind`` (the
    run's method; :class:`~cseaug.config.RunConfig` refuses a source of the other kind); a
    ConfigError when its path is missing or a level has fewer than ``k`` candidates."""
    path, files = None, {}
    if cfg.source == "paper":
        levels, candidates = _paper_examples(cfg, kind)
    else:
        source = _source_path(cfg)
        table, read = _read_source(cfg, source)
        path, files = str(source), {f: file_sha256(f) for f in read}
        examples = _nli_examples if kind == "nli" else _sts_examples
        levels, candidates = examples(table, cfg)
    return ExampleSet(
        kind=kind,
        levels=levels,
        source=cfg.source,
        path=path,
        files=files,
        seed=cfg.seed,
        candidates=candidates,
    )
