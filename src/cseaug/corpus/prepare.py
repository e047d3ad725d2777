"""The first step of every build: :func:`prepare_corpus` streams, cleans, deduplicates and
samples the corpus into the ``aigen`` rows that get views and the ``other`` rows; every dropped
line is a reject with its reason (docs/corpus.md: each step and the memory it takes).

Example:
    >>> from cseaug.config import CorpusConfig, SampleConfig
    >>> prepared = prepare_corpus(
    ...     CorpusConfig(path="examples/demo_corpus.txt"), SampleConfig(size=8), method="sts")
    >>> prepared.sample.num_rows, prepared.stats["sample_size"]
    (8, 8)
    >>> other = prepared.other_batches().read_all()  # or stream it: for batch in ...
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cseaug.config import CorpusConfig, SampleConfig
from cseaug.corpus.cleaning import (
    DUPLICATE,
    REASONS,
    TextRules,
    clean_batch,
    kept_schema,
    malformed_rejects,
    rejects_from_arrays,
)
from cseaug.corpus.dedup import find_duplicates
from cseaug.corpus.rows import ChunkedRows
from cseaug.corpus.sampling import choose_sample, key_ids, row_keys, sample_rank
from cseaug.dataset.schema import CANONICAL_SCHEMA, SPLIT_AIGEN, SPLIT_OTHER
from cseaug.errors import InputError
from cseaug.progress import progress_bar
from cseaug.readers.corpus import open_corpus
from cseaug.readers.source import CorpusSource

OTHER_BATCH_ROWS = 65_536
"""Largest batch :meth:`PreparedCorpus.other_batches` yields."""

logger = logging.getLogger(__name__)


@dataclass
class PreparedCorpus:
    """A cleaned, deduplicated, sampled corpus: the ``aigen`` rows in corpus order (given views
    filled, generated views null), every dropped line, the counts, and the number of
    ``other`` rows :meth:`other_batches` streams."""

    name: str
    sample: pa.Table
    rejects: pa.Table
    stats: dict[str, Any]
    num_other: int
    _rows: ChunkedRows
    _keys: np.ndarray
    _other_mask: np.ndarray

    def other_batches(self, batch_rows: int = OTHER_BATCH_ROWS) -> pa.RecordBatchReader:
        """The ``other`` rows, in corpus order, as a new stream of record batches."""

        def batches() -> Iterator[pa.RecordBatch]:
            for part, keys in self._rows.filter(self._other_mask, self._keys):
                for start in range(0, part.num_rows, batch_rows):
                    ids = key_ids(keys[start : start + batch_rows])
                    yield canonical_batch(part.slice(start, batch_rows), ids, SPLIT_OTHER, None)

        return pa.RecordBatchReader.from_batches(CANONICAL_SCHEMA, batches())


def canonical_batch(
    rows: pa.RecordBatch, ids: pa.Array, split: str, method: str | None
) -> pa.RecordBatch:
    """Canonical rows from prepared rows (``sentence`` and given view columns) and their ids.

    Example:
        >>> import pyarrow as pa
        >>> b = pa.record_batch({"sentence": ["A cat sat."]})
        >>> canonical_batch(b, pa.array(["ed691a84f513cbd7"]), "other", None).column("split").to_pylist()
        ['other']
    """
    count = rows.num_rows
    given = {name: rows.column(name) for name in rows.schema.names} | {
        "id": ids,
        "split": pa.repeat(pa.scalar(split), count),
        "method": pa.repeat(pa.scalar(method, pa.string()), count),
        "heldout": pa.repeat(pa.scalar(False), count),
    }
    arrays = [given.get(f.name, pa.nulls(count, f.type)) for f in CANONICAL_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=CANONICAL_SCHEMA)


def prepare_corpus(corpus: CorpusConfig, sample: SampleConfig, method: str) -> PreparedCorpus:
    """Read, clean, deduplicate and sample a corpus (``method`` goes into the sample's
    ``method`` column); an InputError when no sentence survives cleaning.

    Example:
        >>> from cseaug.config import CorpusConfig, SampleConfig
        >>> p = prepare_corpus(CorpusConfig(path="examples/demo_corpus.txt"),
        ...                    SampleConfig(size=3, seed=1), method="sts")
        >>> p.sample.column("split").to_pylist()
        ['aigen', 'aigen', 'aigen']
    """
    source = open_corpus(corpus)
    rows, keys, reject_tables, records_read, invisible_removed = _read_and_clean(source, corpus)
    reject_tables.append(malformed_rejects(source.reader_rejects))
    if records_read == 0:
        raise InputError(f"corpus {source.location} holds no record")

    unique = np.ones(len(rows), dtype=bool)
    with progress_bar(f"Deduplicating and sampling {source.name}", total=2, unit="steps") as bar:
        duplicates, firsts = find_duplicates([b.column("sentence") for b in rows.batches], keys)
        unique[duplicates] = False
        reject_tables.append(_duplicate_rejects(rows, duplicates, firsts, source.record_key))
        bar.advance()
        chosen = choose_sample(sample_rank(keys, sample.seed), sample.size, eligible=unique)
        bar.advance()
    rejects = pa.concat_tables([t for t in reject_tables if t.num_rows] or reject_tables[:1])
    found = pc.value_counts(rejects.column("reason")).to_pylist()
    rejected = dict.fromkeys(REASONS, 0) | {row["values"]: row["counts"] for row in found}
    sentences = int(unique.sum())
    if sentences == 0:
        counts = ", ".join(f"{k} {v}" for k, v in rejected.items() if v)
        raise InputError(
            f"no sentence of corpus {source.location} survives cleaning ({records_read} records; "
            f"rejected: {counts}); check corpus.text_column, min_chars and max_chars"
        )
    other_mask = unique.copy()
    other_mask[chosen] = False
    available_other = int(other_mask.sum())
    if not sample.include_other:
        other_mask[:] = False

    sample_table = pa.Table.from_batches(
        [canonical_batch(rows.take(chosen), key_ids(keys[chosen]), SPLIT_AIGEN, method)],
        schema=CANONICAL_SCHEMA,
    )
    stats = {
        "corpus": source.name,
        "format": source.format,
        "source": source.location,
        "records_read": records_read,
        "rejected": rejected,
        "rejected_total": rejects.num_rows,
        "invisible_characters_removed": invisible_removed,
        "sentences": sentences,
        "sample_requested": sample.size,
        "sample_size": int(chosen.size),
        "sample_all": bool(chosen.size == sentences),
        "seed": sample.seed,
        "other_rows": int(other_mask.sum()),
        "other_not_published": 0 if sample.include_other else available_other,
    }
    return PreparedCorpus(
        name=source.name,
        sample=sample_table,
        rejects=rejects,
        stats=stats,
        num_other=stats["other_rows"],
        _rows=rows,
        _keys=keys,
        _other_mask=other_mask,
    )


def warn_short_sample(prepared: PreparedCorpus) -> None:
    """Log a warning when the build asked for more sentences than the corpus holds (all of
    them were taken); the OssCSE tools, which take every sentence on purpose, do not call it."""
    stats = prepared.stats
    if stats["sample_requested"] > stats["sample_size"]:
        logger.warning(
            "sample.size %s is larger than corpus %s: it holds %s sentences after cleaning and "
            "deduplication, and all %s were taken",
            f"{stats['sample_requested']:,}", prepared.name, f"{stats['sentences']:,}",
            f"{stats['sample_size']:,}",
        )  # fmt: skip


def _read_and_clean(
    source: CorpusSource, corpus: CorpusConfig
) -> tuple[ChunkedRows, np.ndarray, list[pa.Table], int, int]:
    """Stream the source once: clean every batch and hash its kept sentences into keys."""
    kept_batches: list[pa.RecordBatch] = []
    key_chunks: list[np.ndarray] = []
    reject_tables: list[pa.Table] = []
    records_read = invisible_removed = 0
    rules = TextRules(invisible=corpus.invisible_characters, special_tokens=corpus.special_tokens)
    unit = "lines" if source.record_key == "line" else "records"
    with progress_bar(f"Cleaning {source.name}", total=source.total_records, unit=unit) as bar:
        for batch in source.batches():
            cleaned = clean_batch(
                batch,
                records_read + 1,
                min_chars=corpus.min_chars,
                max_chars=corpus.max_chars,
                record_key=source.record_key,
                rules=rules,
            )
            records_read += batch.num_rows
            invisible_removed += cleaned.invisible_removed
            reject_tables.append(cleaned.rejects)
            if cleaned.kept.num_rows:
                kept_batches.append(cleaned.kept)
                key_chunks.append(row_keys(source.name, cleaned.kept.column("sentence")))
            bar.advance(batch.num_rows)
    rows = ChunkedRows(kept_batches, kept_schema(list(source.view_columns)))
    keys = np.concatenate(key_chunks) if key_chunks else np.array([], dtype=np.uint64)
    return rows, keys, reject_tables, records_read, invisible_removed


def _duplicate_rejects(
    rows: ChunkedRows, duplicates: np.ndarray, firsts: np.ndarray, record_key: str
) -> pa.Table:
    """Rejects for repeated sentences; detail names the record kept in their place."""
    repeats = rows.take(duplicates)
    first_records = rows.take(firsts).column("record")
    sentence = repeats.column("sentence")
    detail = pc.binary_join_element_wise(
        f'{{"{record_key}": ',
        pc.cast(repeats.column("record"), pa.string()),
        f', "first_{record_key}": ',
        pc.cast(first_records, pa.string()),
        "}",
        "",
    )
    return rejects_from_arrays(
        sentence=sentence,
        reason=pa.repeat(pa.scalar(DUPLICATE), len(duplicates)),
        raw=pc.coalesce(repeats.column("raw"), sentence),
        detail=detail,
    )
