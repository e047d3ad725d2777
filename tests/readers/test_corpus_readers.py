"""Readers: every format streams the right records, and bad sources fail before any work."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cseaug.config import CorpusConfig
from cseaug.errors import ConfigError, InputError, MissingExtraError
from cseaug.readers.corpus import detect_format, open_corpus
from cseaug.readers.text import read_lines


def read_all(cfg: CorpusConfig) -> pa.Table:
    source = open_corpus(cfg)
    return pa.Table.from_batches(list(source.batches()))


def texts(table: pa.Table) -> list:
    return [v.decode() if isinstance(v, bytes) else v for v in table.column("text").to_pylist()]


# ------------------------------------------------------------------------ text


def test_text_crlf_bom_and_trailing_newline(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(b"\xef\xbb\xbfFirst line\r\nSecond\r\n\r\nFourth\r\n")
    assert texts(read_all(CorpusConfig(path=str(path)))) == ["First line", "Second", "", "Fourth"]


def test_text_without_final_newline_keeps_last_line(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes(b"a\n\nb")
    assert texts(read_all(CorpusConfig(path=str(path)))) == ["a", "", "b"]


@pytest.mark.parametrize("block", [1, 2, 3, 5, 8, 64])
def test_text_lines_do_not_depend_on_block_size(tmp_path: Path, block: int) -> None:
    path = tmp_path / "c.txt"
    path.write_bytes("\ufeffé one\r\ntwo\n\nthree four\r\nlast".encode())
    lines = [v for b in read_lines(path, block_bytes=block) for v in b.column("text").to_pylist()]
    assert lines == ["é one".encode(), b"two", b"", b"three four", b"last"]


def test_text_gzip_is_decompressed(tmp_path: Path) -> None:
    path = tmp_path / "c.txt.gz"
    path.write_bytes(gzip.compress(b"alpha\nbeta\n"))
    source = open_corpus(CorpusConfig(path=str(path)))
    assert source.format == "text" and source.name == "c"
    assert texts(pa.Table.from_batches(list(source.batches()))) == ["alpha", "beta"]


def test_text_rejects_columns(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("a\n")
    with pytest.raises(ConfigError, match="text file"):
        open_corpus(CorpusConfig(path=str(path), text_column="sentence"))


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        open_corpus(CorpusConfig(path=str(tmp_path / "nope.txt")))
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        open_corpus(CorpusConfig(path=str(tmp_path / "empty.txt")))


def test_unknown_suffix_names_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"t": "a"}\n')
    with pytest.raises(InputError, match=r"corpus\.format"):
        open_corpus(CorpusConfig(path=str(path)))
    # An explicit format reads it.
    assert texts(read_all(CorpusConfig(path=str(path), format="jsonl", text_column="t"))) == ["a"]


def test_detect_format() -> None:
    assert detect_format(Path("a.TSV")) == "tsv"
    assert detect_format(Path("a.ndjson.bz2")) == "jsonl"
    assert detect_format(Path("dir.parquet")) == "parquet"


# ------------------------------------------------------------------------ csv / tsv


def test_csv_quoted_newlines_views_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "nli.csv"
    path.write_bytes(b'\xef\xbb\xbfsent0,sent1,hard_neg\r\n"A, quoted\nline",p1,n1\r\nB,p2,\r\n')
    cfg = CorpusConfig(
        path=str(path),
        text_column="sent0",
        view_columns={"positive": "sent1", "negative": "hard_neg"},
    )
    table = read_all(cfg)
    assert table.column_names == ["text", "positive", "negative"]
    assert texts(table) == ["A, quoted\nline", "B"]
    assert table.column("positive").to_pylist() == ["p1", "p2"]
    assert table.column("negative").to_pylist() == ["n1", ""]


def test_csv_missing_column_names_the_columns_present(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("sent0,sent1\na,b\n")
    with pytest.raises(
        InputError, match=r"'sentence' is not a column .*columns present: sent0, sent1"
    ):
        open_corpus(CorpusConfig(path=str(path), text_column="sentence"))
    with pytest.raises(InputError, match=r"view_columns.negative 'hard_neg'"):
        open_corpus(
            CorpusConfig(path=str(path), text_column="sent0", view_columns={"negative": "hard_neg"})
        )
    with pytest.raises(InputError, match=r"text_column is required.*sent0, sent1"):
        open_corpus(CorpusConfig(path=str(path)))


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_view_that_is_the_text_column_is_refused(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"c.{fmt}"
    lines = ["a,b", "hello world,x"] if fmt == "csv" else ['{"a": "hello world", "b": "x"}']
    path.write_text("\n".join(lines) + "\n")
    cfg = CorpusConfig(path=str(path), format=fmt, text_column="a", view_columns={"positive": "a"})
    with pytest.raises(InputError, match=r"view_columns\.positive is the text column 'a'"):
        open_corpus(cfg)


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_two_views_may_name_one_column(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / f"c.{fmt}"
    sep = "\t" if fmt == "tsv" else ","
    lines = (
        [f"a{sep}b", f"hello world{sep}x"] if fmt != "jsonl" else ['{"a": "hello world", "b": "x"}']
    )
    path.write_text("\n".join(lines) + "\n")
    views = {"positive": "b", "knowledge": "b"}
    source = open_corpus(CorpusConfig(path=str(path), text_column="a", view_columns=views))
    rows = [row for batch in source.batches() for row in batch.to_pylist()]
    assert [(row["positive"], row["knowledge"]) for row in rows] == [("x", "x")]


def test_csv_malformed_rows_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("a,b\nx,1\ny,2,extra\nz,3\n")
    source = open_corpus(CorpusConfig(path=str(path), text_column="a"))
    assert texts(pa.Table.from_batches(list(source.batches()))) == ["x", "z"]
    assert [r["raw"] for r in source.reader_rejects] == ["y,2,extra"]
    assert source.reader_rejects[0]["detail"]["actual_columns"] == 3


def test_tsv_has_no_quoting(tmp_path: Path) -> None:
    path = tmp_path / "c.tsv"
    path.write_text('text\tother\nHe said "hi\tx\n"odd quote\ty\n')
    assert texts(read_all(CorpusConfig(path=str(path), text_column="text"))) == [
        'He said "hi',
        '"odd quote',
    ]


# ------------------------------------------------------------------------ jsonl


def test_jsonl_reads_named_key_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    rows = [{"text": "one", "n": 1}, {"text": "two", "extra": [1]}, {"n": 3}]
    path.write_text(
        "\n".join(json.dumps(r) for r in rows[:2]) + "\n\n" + json.dumps(rows[2]) + "\n"
    )
    assert texts(read_all(CorpusConfig(path=str(path), text_column="text"))) == ["one", "two", None]


def test_jsonl_missing_key(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"sentence": "a", "label": 1}\n')
    with pytest.raises(InputError, match="columns present: sentence, label"):
        open_corpus(CorpusConfig(path=str(path), text_column="text"))


def test_jsonl_wrong_type_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"t": "a"}\n{"t": 5}\n')
    source = open_corpus(CorpusConfig(path=str(path), text_column="t"))
    with pytest.raises(InputError, match="cannot read corpus"):
        list(source.batches())


# ------------------------------------------------------------------------ parquet


def test_parquet_file_and_directory(tmp_path: Path) -> None:
    table = pa.table({"s": pa.array(["a", "b"], pa.large_string()), "p": ["x", "y"], "n": [1, 2]})
    pq.write_table(table, tmp_path / "one.parquet")
    cfg = CorpusConfig(
        path=str(tmp_path / "one.parquet"), text_column="s", view_columns={"positive": "p"}
    )
    source = open_corpus(cfg)
    assert source.total_records == 2
    out = pa.Table.from_batches(list(source.batches()))
    assert texts(out) == ["a", "b"] and out.column("positive").to_pylist() == ["x", "y"]

    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(table.slice(1), folder / "part-1.parquet")
    pq.write_table(table.slice(0, 1), folder / "part-0.parquet")
    assert texts(read_all(CorpusConfig(path=str(folder), format="parquet", text_column="s"))) == [
        "a",
        "b",
    ]


def test_parquet_non_text_column(tmp_path: Path) -> None:
    pq.write_table(pa.table({"n": [1, 2]}), tmp_path / "c.parquet")
    source = open_corpus(CorpusConfig(path=str(tmp_path / "c.parquet"), text_column="n"))
    with pytest.raises(InputError, match="type int64, not text"):
        list(source.batches())


def test_parquet_without_rows(tmp_path: Path) -> None:
    pq.write_table(pa.table({"s": pa.array([], pa.string())}), tmp_path / "c.parquet")
    with pytest.raises(InputError, match="empty"):
        open_corpus(CorpusConfig(path=str(tmp_path / "c.parquet"), text_column="s"))


# ------------------------------------------------------------------------ Hugging Face


def test_hf_load_dataset_from_local_files(tmp_path: Path, hf_cache: Path) -> None:
    folder = tmp_path / "my_corpus"
    folder.mkdir()
    (folder / "train.jsonl").write_text(
        json.dumps({"sentence": "A cat sat.", "pos": "A cat was sitting."})
        + "\n"
        + json.dumps({"sentence": "Dogs bark.", "pos": "A dog barks."})
        + "\n"
    )
    cfg = CorpusConfig(
        hf_dataset=str(folder), text_column="sentence", view_columns={"positive": "pos"}
    )
    source = open_corpus(cfg)
    assert source.format == "hf" and source.name == "my_corpus" and source.total_records == 2
    out = pa.Table.from_batches(list(source.batches()))
    assert texts(out) == ["A cat sat.", "Dogs bark."]
    assert out.column("positive").to_pylist() == ["A cat was sitting.", "A dog barks."]
    hashes = source.input_sha256()
    assert len(hashes) == 1 and next(iter(hashes)).startswith(f"hf://{folder}/default/train/")


def test_hf_save_to_disk_directory(tmp_path: Path, hf_cache: Path) -> None:
    import datasets

    datasets.Dataset.from_dict({"text": ["x", "y", "z"]}).save_to_disk(str(tmp_path / "saved"))
    out = read_all(CorpusConfig(hf_dataset=str(tmp_path / "saved"), text_column="text"))
    assert texts(out) == ["x", "y", "z"]


def test_hf_missing_column_and_unknown_id(tmp_path: Path, hf_cache: Path) -> None:
    import datasets

    datasets.Dataset.from_dict({"text": ["x"]}).save_to_disk(str(tmp_path / "saved"))
    with pytest.raises(InputError, match="columns present: text"):
        open_corpus(CorpusConfig(hf_dataset=str(tmp_path / "saved"), text_column="sentence"))
    with pytest.raises(InputError, match="cannot load Hugging Face dataset 'no-such/dataset-xyz'"):
        open_corpus(CorpusConfig(hf_dataset="no-such/dataset-xyz", text_column="text"))


def test_hf_without_datasets_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(MissingExtraError, match=r"cseaug\[hf\]"):
        open_corpus(CorpusConfig(hf_dataset="some/id", text_column="text"))


def test_hf_format_needs_a_dataset(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("a\n")
    with pytest.raises(ConfigError, match="hf_dataset"):
        open_corpus(CorpusConfig(path=str(path), format="hf"))
