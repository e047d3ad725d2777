"""Generate-CSE random selection of a positive view (VAEGPT-Sim paper, section 3.2, appendix A.1).

For every anchor and view (one per training epoch) a draw seeded by (seed, anchor id, view)
picks the method that writes the view over whitespace-separated words: an edit or the synonym
``generator``, whose empty generations are rejected and redrawn among the edits
(docs/vaegpt.md, "Generate-CSE random selection").

Example:
    >>> from cseaug.config import GenerateCSEConfig
    >>> selection = RandomSelection(GenerateCSEConfig(views=2, seed=1))
    >>> views, rejects = selection.views([("a1", "a cat sat on the mat today")])
    >>> [v.method for v in views[0]]
    ['dropout', 'dropout']
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any, Protocol

import pyarrow as pa

from cseaug.config import GENERATE_CSE_METHODS, GenerateCSEConfig
from cseaug.dataset.schema import SPLIT_AIGEN, reject_record, rejects_table, rows_table
from cseaug.secrets import Scrubber
from cseaug.step import Step, StepResult

EDIT_METHODS: tuple[str, ...] = ("shuffle", "cutoff", "dropout", "repetition")  # no model

STAGE_NAME = "generate_cse"
EMPTY = "empty_generation"  # the reject reason of a generation cleaned to nothing


class SynonymGenerator(Protocol):
    """Anything that writes synonymous sentences (VAEGPT-Sim, a back-translator, an LLM)."""

    def generate(self, sentences: Sequence[str], num_return_sequences: int = 1) -> list[list[str]]:
        """``num_return_sequences`` candidates for each sentence, in input order."""

    def identity(self) -> dict[str, Any]:
        """What identifies the generator's output (model files, settings), for manifests."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class View:
    """One view of an anchor: its number (the epoch it serves), text and method."""

    view: int
    text: str
    method: str


def cutoff_range(n_words: int) -> tuple[int, int] | None:
    """Closed range of N (words deleted) for a sentence of ``n_words``; None: left unchanged.

    Example:
        >>> cutoff_range(3), cutoff_range(4), cutoff_range(30)
        (None, (1, 1), (1, 6))
    """
    if n_words <= 3:
        return None
    return 1, min(6, n_words // 3)


def repetition_range(n_words: int) -> tuple[int, int]:
    """Closed range of N (words repeated) for a sentence of ``n_words``.

    Example:
        >>> repetition_range(1), repetition_range(11)
        ((1, 1), (1, 3))
    """
    return 1, max(1, int((n_words - 1) * 0.3))


def shuffle_words(text: str, rng: random.Random) -> str:
    """The words of ``text`` in a random order."""
    words = text.split()
    rng.shuffle(words)
    return " ".join(words)


def cutoff_words(text: str, rng: random.Random) -> str:
    """``text`` with N random words deleted (see :func:`cutoff_range`)."""
    words = text.split()
    bounds = cutoff_range(len(words))
    if bounds is None:
        return " ".join(words)
    deleted = set(rng.sample(range(len(words)), rng.randint(*bounds)))
    return " ".join(w for i, w in enumerate(words) if i not in deleted)


def drop_words(text: str, rng: random.Random, rate: float) -> str:
    """``text`` with each word deleted with probability ``rate``; one word survives at least."""
    words = text.split()
    kept = [w for w in words if rng.random() >= rate]
    if not kept and words:
        kept = [words[rng.randrange(len(words))]]
    return " ".join(kept)


def repeat_words(text: str, rng: random.Random) -> str:
    """``text`` with N random words duplicated in place (see :func:`repetition_range`)."""
    words = text.split()
    if not words:
        return ""
    low, high = repetition_range(len(words))
    repeated = set(rng.sample(range(len(words)), min(rng.randint(low, high), len(words))))
    out: list[str] = []
    for i, word in enumerate(words):
        out.extend([word, word] if i in repeated else [word])
    return " ".join(out)


def view_rng(seed: int, anchor_id: str, view: int) -> random.Random:
    """The random stream of one (anchor, view): independent of shards and of other anchors."""
    digest = hashlib.sha256(f"{seed}\x00{anchor_id}\x00{view}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _normalised(
    probabilities: Mapping[str, float], methods: Sequence[str]
) -> list[tuple[str, float]]:
    weights = [(m, float(probabilities.get(m, 0.0))) for m in methods]
    total = sum(w for _, w in weights)
    if total <= 0:
        raise ValueError(f"no positive probability among {list(methods)}: {dict(probabilities)}")
    return [(m, w / total) for m, w in weights if w > 0]


def _draw(table: Sequence[tuple[str, float]], rng: random.Random) -> str:
    cumulative = list(itertools.accumulate(weight for _, weight in table))
    return table[min(bisect.bisect_right(cumulative, rng.random()), len(table) - 1)][0]


def _clean_generation(text: str) -> str:
    first_line = text.strip().split("\n", 1)[0]
    return " ".join(first_line.split())


class RandomSelection:
    """Draws a method per (anchor, view) and writes the views (appendix A.1); without a
    ``generator`` the other methods' probabilities are renormalised.

    Example:
        >>> from cseaug.config import GenerateCSEConfig
        >>> sel = RandomSelection(GenerateCSEConfig(probabilities={"shuffle": 1.0}))
        >>> views, _ = sel.views([("x", "one two three")])
        >>> views[0][0].method
        'shuffle'
    """

    def __init__(
        self, config: GenerateCSEConfig, generator: SynonymGenerator | None = None
    ) -> None:
        self.config = config
        self.generator = generator
        available = [m for m in GENERATE_CSE_METHODS if m != "generator" or generator is not None]
        self.table = _normalised(config.probabilities, available)
        edits = {m: config.probabilities.get(m, 0.0) for m in EDIT_METHODS}
        if not any(w > 0 for w in edits.values()):
            # a generator-only draw still needs somewhere to go when a generation is empty
            edits = dict.fromkeys(EDIT_METHODS, 1.0)
        self.fallback_table = _normalised(edits, EDIT_METHODS)
        self.edits: dict[str, Callable[[str, random.Random], str]] = {
            "shuffle": shuffle_words,
            "cutoff": cutoff_words,
            "dropout": partial(drop_words, rate=config.dropout_rate),
            "repetition": repeat_words,
        }

    def views(self, anchors: Sequence[tuple[str, str]]) -> tuple[list[list[View]], list[dict]]:
        """``config.views`` views of each (id, sentence) anchor, in view order, and the reject
        records of failed generations."""
        n_views = self.config.views
        draws: dict[tuple[int, int], tuple[random.Random, str]] = {}
        for i, (anchor_id, _) in enumerate(anchors):
            for k in range(n_views):
                rng = view_rng(self.config.seed, anchor_id, k)
                draws[(i, k)] = rng, _draw(self.table, rng)

        generated: dict[tuple[int, int], str] = {}
        wanted = [key for key, (_, method) in draws.items() if method == "generator"]
        if wanted and self.generator is not None:
            sentences = [anchors[i][1] for i, _ in wanted]
            answers = self.generator.generate(sentences, num_return_sequences=1)
            generated = {
                key: answer[0] if answer else ""
                for key, answer in zip(wanted, answers, strict=True)
            }

        out: list[list[View]] = []
        rejects: list[dict] = []
        scrub = Scrubber()
        for i, (anchor_id, sentence) in enumerate(anchors):
            row_views = []
            for k in range(n_views):
                rng, method = draws[(i, k)]
                if method == "generator":
                    text = _clean_generation(generated[(i, k)])
                    if not text:
                        fallback = _draw(self.fallback_table, rng)
                        view, detail = f"augmentations[{k}]", {"replaced_by": fallback}
                        record = (anchor_id, sentence, STAGE_NAME, view, EMPTY, generated[(i, k)])
                        rejects.append(reject_record(*record, detail, scrub))
                        method, text = fallback, self.edits[fallback](sentence, rng)
                else:
                    text = self.edits[method](sentence, rng)
                row_views.append(View(k, text, method))
            out.append(row_views)
        return out, rejects


class GenerateCSEStage(Step):
    """Generate-CSE as a step: fills ``positive`` (and ``positive_method``) with view 0 and
    ``augmentations`` with every view.

    Example:
        >>> from cseaug.config import GenerateCSEConfig
        >>> from cseaug.dataset.schema import rows_table
        >>> stage = GenerateCSEStage(GenerateCSEConfig(views=3))
        >>> result = stage(rows_table([{"id": "a", "sentence": "a dog runs on the grass", "split": "aigen"}]))
        >>> len(result.rows.column("augmentations")[0])
        3
    """

    name = STAGE_NAME

    def __init__(
        self, config: GenerateCSEConfig, generator: SynonymGenerator | None = None
    ) -> None:
        self.selection = RandomSelection(config, generator)
        self.generator = generator

    def __call__(self, rows: pa.Table) -> StepResult:
        records = rows.to_pylist()
        views, rejects = self.selection.views([(r["id"], r["sentence"]) for r in records])
        out = []
        for record, row_views in zip(records, views, strict=True):
            first = row_views[0]
            out.append(
                {
                    **record,
                    "split": SPLIT_AIGEN,
                    "method": STAGE_NAME,
                    "positive": first.text,
                    "positive_method": first.method,
                    "augmentations": [asdict(v) for v in row_views],
                }
            )
        methods = Counter(v.method for row_views in views for v in row_views)
        stats = {
            "anchors": len(records),
            "views": sum(methods.values()),
            "methods": dict(sorted(methods.items())),
            "empty_generations": len(rejects),
        }
        return StepResult(rows=rows_table(out), rejects=rejects_table(rejects), stats=stats)

    def manifest(self) -> dict[str, Any]:
        """The draw actually used and the generator's identity."""
        selection = self.selection
        return {
            "model": {
                "generate_cse": {
                    "probabilities": dict(selection.table),
                    "views": selection.config.views,
                    "seed": selection.config.seed,
                    "dropout_rate": selection.config.dropout_rate,
                    "generator": self.generator.identity() if self.generator else None,
                }
            }
        }

    def close(self) -> None:
        """Release the generator's model (if there is a generator)."""
        if self.generator is not None:
            self.generator.close()
        self.generator = None
