"""prepare_corpus: canonical sample and other rows, rejects, stats, determinism, real data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
import unicodedata
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from cseaug.config import CorpusConfig, SampleConfig
from cseaug.corpus import prepare_corpus
from cseaug.dataset.schema import CANONICAL_SCHEMA, REJECTS_SCHEMA, row_id
from cseaug.errors import InputError
from cseaug.text_hazards import remove_invisible

REPO = Path(__file__).resolve().parents[2]


def write_corpus(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def distinct_lines(n: int) -> list[str]:
    return [f"Sentence number {i} says something." for i in range(n)]


def prepare(path: Path, size: int = 10, seed: int = 42, **corpus: object):
    return prepare_corpus(
        CorpusConfig(path=str(path), **corpus), SampleConfig(size=size, seed=seed), "sts"
    )


def test_sample_and_other_are_canonical_disjoint_and_complete(tmp_path: Path) -> None:
    lines = [*distinct_lines(100), "Sentence number 3 says something.", "", "  "]
    prepared = prepare(write_corpus(tmp_path / "c.txt", lines), size=10)
    sample = prepared.sample
    other = prepared.other_batches().read_all()
    assert sample.schema.equals(CANONICAL_SCHEMA, check_metadata=True)
    assert other.schema.equals(CANONICAL_SCHEMA)
    assert sample.num_rows == 10 and other.num_rows == prepared.num_other == 90
    assert set(sample.column("split").to_pylist()) == {"aigen"}
    assert set(sample.column("method").to_pylist()) == {"sts"}
    assert set(other.column("split").to_pylist()) == {"other"}
    assert other.column("method").null_count == other.num_rows
    assert not any(sample.column("heldout").to_pylist() + other.column("heldout").to_pylist())
    both = sample.column("sentence").to_pylist() + other.column("sentence").to_pylist()
    assert sorted(both) == sorted(distinct_lines(100))
    assert sample.column("id").to_pylist() == [
        row_id("c", s) for s in sample.column("sentence").to_pylist()
    ]
    # Corpus order inside each part.
    positions = [distinct_lines(100).index(s) for s in sample.column("sentence").to_pylist()]
    assert positions == sorted(positions)
    assert prepared.rejects.schema.equals(REJECTS_SCHEMA)
    assert prepared.stats["rejected"]["duplicate"] == 1 and prepared.stats["rejected"]["empty"] == 2
    assert prepared.stats["records_read"] == 103 and prepared.stats["sentences"] == 100
    dup = prepared.rejects.filter(pa.compute.equal(prepared.rejects.column("reason"), "duplicate"))
    assert json.loads(dup.column("detail")[0].as_py()) == {"line": 101, "first_line": 4}


def test_other_batches_stream_in_bounded_batches(tmp_path: Path) -> None:
    prepared = prepare(write_corpus(tmp_path / "c.txt", distinct_lines(250)), size=5)
    sizes = [b.num_rows for b in prepared.other_batches(batch_rows=64)]
    assert max(sizes) <= 64 and sum(sizes) == 245
    # Each call is a new stream.
    assert prepared.other_batches().read_all().num_rows == 245


def test_same_seed_same_sample_other_seed_other_sample(tmp_path: Path) -> None:
    path = write_corpus(tmp_path / "c.txt", distinct_lines(500))
    a = prepare(path, size=50, seed=1).sample.column("id").to_pylist()
    b = prepare(path, size=50, seed=1).sample.column("id").to_pylist()
    c = prepare(path, size=50, seed=2).sample.column("id").to_pylist()
    assert a == b
    assert set(a) != set(c)


def test_sample_independent_of_python_hash_seed(tmp_path: Path) -> None:
    path = write_corpus(tmp_path / "c.txt", distinct_lines(400))
    here = prepare(path, size=25, seed=9).sample.column("id").to_pylist()
    script = (
        "import json, sys\n"
        "from cseaug.config import CorpusConfig, SampleConfig\n"
        "from cseaug.corpus import prepare_corpus\n"
        "p = prepare_corpus(CorpusConfig(path=sys.argv[1]), SampleConfig(size=25, seed=9), 'sts')\n"
        "print(json.dumps(p.sample.column('id').to_pylist()))\n"
    )
    for hash_seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "CSEAUG_PROGRESS": "0"}
        done = subprocess.run(
            [sys.executable, "-c", script, str(path)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        assert json.loads(done.stdout) == here


def test_sample_the_whole_corpus_when_size_exceeds_it(tmp_path: Path) -> None:
    prepared = prepare(write_corpus(tmp_path / "c.txt", distinct_lines(30)), size=20_000)
    assert prepared.sample.num_rows == 30 and prepared.num_other == 0
    assert prepared.stats["sample_all"] is True and prepared.stats["sample_requested"] == 20_000


def test_include_other_false(tmp_path: Path) -> None:
    prepared = prepare_corpus(
        CorpusConfig(path=str(write_corpus(tmp_path / "c.txt", distinct_lines(30)))),
        SampleConfig(size=10, include_other=False),
        "ski",
    )
    assert prepared.num_other == 0 and prepared.other_batches().read_all().num_rows == 0
    assert prepared.stats["other_not_published"] == 20


def test_nothing_left_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"survives cleaning.*empty 2"):
        prepare(write_corpus(tmp_path / "c.txt", ["", "   "]))
    header_only = tmp_path / "h.csv"
    header_only.write_text("text,label\n")
    with pytest.raises(InputError, match="holds no record"):
        prepare(header_only, text_column="text")


def test_csv_views_are_carried_and_invalid_bytes_rejected(tmp_path: Path) -> None:
    path = tmp_path / "nli.csv"
    path.write_bytes(
        b"sent0,sent1,hard_neg\n"
        b"A man sleeps.,A person rests.,A man runs.\n"
        b"Bad \xff bytes.,x,y\n"
        b"A man sleeps.,Someone naps.,Nobody sleeps.\n"
        b"Cafe\xcc\x81 open.,  ,It is closed.\n"
    )
    prepared = prepare_corpus(
        CorpusConfig(
            path=str(path),
            text_column="sent0",
            view_columns={"positive": "sent1", "negative": "hard_neg"},
        ),
        SampleConfig(size=5),
        "nli",
    )
    rows = {r["sentence"]: r for r in prepared.sample.to_pylist()}
    assert rows["A man sleeps."]["positive"] == "A person rests."  # first triple kept
    assert (
        rows["Café open."]["positive"] is None and rows["Café open."]["negative"] == "It is closed."
    )
    reasons = prepared.rejects.column("reason").to_pylist()
    assert sorted(reasons) == ["duplicate", "invalid_utf8"]


def test_jsonl_and_parquet_give_the_same_rows_as_text(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    lines = distinct_lines(40)
    text = prepare(write_corpus(tmp_path / "c.txt", lines), size=7)
    (tmp_path / "c.jsonl").write_text("".join(json.dumps({"s": s}) + "\n" for s in lines))
    pq.write_table(pa.table({"s": lines}), tmp_path / "c.parquet")
    for other in ("c.jsonl", "c.parquet"):
        got = prepare(tmp_path / other, size=7, text_column="s")
        assert got.sample.column("id").to_pylist() == text.sample.column("id").to_pylist()


@pytest.mark.slow
def test_python_allocations_do_not_grow_per_line(tmp_path: Path) -> None:
    """Python-level allocations stay far below one object per line (no list of lines)."""
    lines = [f"Line {i} of a corpus with a few more words in it." for i in range(200_000)]
    path = write_corpus(tmp_path / "big.txt", lines)
    prepare(write_corpus(tmp_path / "warm.txt", lines[:100]), size=10)  # lazy imports first
    tracemalloc.start()
    try:
        prepared = prepare(path, size=1000)
        for _ in prepared.other_batches():
            pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # A Python str per line alone would be ~100 bytes per line (20 MB here).
    assert peak / len(lines) < 60, f"{peak / len(lines):.0f} bytes per line"


# ------------------------------------------------------------------------ real data


def test_real_wiki_file(shared_data: Path) -> None:
    path = shared_data / "wiki" / "wiki1m_for_simcse_first11914.txt"
    prepared = prepare(path, size=1000, seed=42)
    expected: list[str] = []
    seen: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        # two lines hold a word joiner (U+2060), removed; one a zero-width non-joiner, kept
        visible = remove_invisible(unicodedata.normalize("NFC", line))
        sentence = " ".join(visible.split()).strip("\u200c\u200d")
        if sentence and sentence not in seen:
            seen.add(sentence)
            expected.append(sentence)
    assert prepared.stats["records_read"] == 11914
    assert prepared.stats["sentences"] == len(expected)
    other = prepared.other_batches().read_all()
    got = prepared.sample.column("sentence").to_pylist() + other.column("sentence").to_pylist()
    assert sorted(got) == sorted(expected)
    assert prepared.sample.num_rows == 1000
    again = prepare(path, size=1000, seed=42)
    assert again.sample.column("id").equals(prepared.sample.column("id"))


def test_real_nli_triples_with_views(shared_data: Path) -> None:
    path = shared_data / "nli" / "nli_triples_snli_devtest.csv"
    prepared = prepare_corpus(
        CorpusConfig(
            path=str(path),
            name="nli",
            text_column="sent0",
            view_columns={"positive": "sent1", "negative": "hard_neg"},
        ),
        SampleConfig(size=500, seed=3),
        "ski",
    )
    sample = prepared.sample
    assert sample.num_rows == 500
    assert sample.column("positive").null_count == 0 and sample.column("negative").null_count == 0
    assert sample.column("knowledge").null_count == 500
    assert sample.column("id")[0].as_py() == row_id("nli", sample.column("sentence")[0].as_py())
    stats = prepared.stats
    assert stats["records_read"] == 5883
    assert stats["sentences"] + stats["rejected_total"] == stats["records_read"]
    assert stats["sample_size"] + stats["other_rows"] == stats["sentences"]
    assert np.all(np.array(prepared.rejects.column("stage").to_pylist()) == "corpus")


def test_hostile_lines_follow_the_corpus_settings(tmp_path: Path) -> None:
    """The corpus section decides; the stats count the lines cleaned of invisible characters,
    and a line that repeats another once its zero-width space is gone is a duplicate."""
    lines = [
        *distinct_lines(5),
        "Sentence number 1 says\u200b something.",
        "Hello <|im_end|> there.",
        "\u200b",
    ]
    path = write_corpus(tmp_path / "c.txt", lines)
    default = prepare(path, size=2)
    assert default.stats["invisible_characters_removed"] == 1
    rejected = default.stats["rejected"]
    assert (rejected["duplicate"], rejected["special_token"], rejected["empty"]) == (1, 1, 1)
    lenient = prepare(path, size=2, invisible_characters="keep", special_tokens="keep")
    assert lenient.stats["sentences"] == 8 and lenient.stats["invisible_characters_removed"] == 0
