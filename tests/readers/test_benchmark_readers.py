"""Benchmark readers against the real files of ../shared/data (counts from shared/data/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from cseaug.errors import InputError
from cseaug.readers.benchmarks import (
    MRPC_SCHEMA,
    NLI_PAIR_SCHEMA,
    NLI_TRIPLE_SCHEMA,
    SICK_SCHEMA,
    STS_SCHEMA,
    nli_triples,
    read_mrpc,
    read_nli_csv,
    read_sick,
    read_snli_senteval,
    read_sts_dir,
    read_sts_table,
    source_info,
)


def test_sts12_train(shared_data: Path) -> None:
    table = read_sts_dir(shared_data / "sts12_train")
    assert table.schema.equals(STS_SCHEMA)
    assert table.num_rows == 2234
    counts = dict(
        zip(*table.group_by("task").aggregate([("s1", "count")]).to_pydict().values(), strict=True)
    )
    assert counts == {"MSRpar": 750, "MSRvid": 750, "SMTeuroparl": 734}
    first = table.slice(0, 1).to_pylist()[0]
    assert first["s1"].startswith("But other sources close to the sale said Vivendi")
    assert first["s2"].endswith("for further bids in the next day or two.")
    assert first["score"] == 4.0
    info = source_info(table)
    assert info["skipped"] == {"empty_score": 0}
    assert info["replaced_lines"] == 0
    assert len(info["files"]) == 6


def test_senteval_sts_skips_empty_scores_like_senteval(shared_data: Path) -> None:
    sts15 = read_sts_dir(shared_data / "senteval_sts" / "STS15-en-test")
    assert sts15.num_rows == 3000
    assert source_info(sts15)["skipped"]["empty_score"] == 8500 - 3000
    sts16 = read_sts_dir(shared_data / "senteval_sts" / "STS16-en-test")
    assert sts16.num_rows == 1186
    sts13 = read_sts_dir(shared_data / "senteval_sts" / "STS13-en-test")
    assert sts13.num_rows == 1500


def test_sts_dir_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        read_sts_dir(tmp_path / "absent")
    (tmp_path / "STS.input.x.txt").write_text("a\tb\nc\td\n")
    with pytest.raises(InputError, match=r"STS\.gs\.x\.txt"):
        read_sts_dir(tmp_path)
    (tmp_path / "STS.gs.x.txt").write_text("1.0\n")
    with pytest.raises(InputError, match="has 2 lines"):
        read_sts_dir(tmp_path)
    (tmp_path / "STS.gs.x.txt").write_text("1.0\nhigh\n")
    with pytest.raises(InputError, match="'high' is not a number"):
        read_sts_dir(tmp_path)


def test_sts_dir_decodes_bad_utf8_and_counts_it(tmp_path: Path) -> None:
    (tmp_path / "STS.input.t.txt").write_bytes(b"caf\xe9 noir\tcoffee\r\nA\tB\r\n")
    (tmp_path / "STS.gs.t.txt").write_bytes(b"3.5\r\n\r\n")
    table = read_sts_dir(tmp_path)
    assert table.to_pylist() == [
        {"task": "t", "s1": "caf\ufffd noir", "s2": "coffee", "score": 3.5}
    ]
    info = source_info(table)
    assert info["replaced_lines"] == 1
    assert info["skipped"] == {"empty_score": 1}


def test_stsb_senteval_and_raw_release(shared_data: Path) -> None:
    lower = read_sts_table(shared_data / "senteval_sts" / "STSBenchmark" / "sts-train.csv")
    raw = read_sts_table(shared_data / "stsbenchmark" / "sts-train.csv")
    assert lower.num_rows == raw.num_rows == 5749
    assert lower.schema.equals(STS_SCHEMA)
    assert raw.slice(0, 1).to_pylist()[0] == {
        "task": "MSRvid",
        "s1": "A plane is taking off.",
        "s2": "An air plane is taking off.",
        "score": 5.0,
    }
    assert lower.slice(0, 1).to_pylist()[0]["s1"] == "a plane is taking off ."
    # rows with source columns after sentence2 keep only the sentences
    headline = raw.filter(
        pa.compute.equal(raw["s1"], "Driver backs into stroller with child, drives off")
    )
    assert headline.column("s2").to_pylist() == [
        "Driver backs into mom, stroller with child then drives off"
    ]
    # unbalanced quotes stay inside their sentence (QUOTE_NONE)
    assert sum('"' in s for s in raw.column("s1").to_pylist() + raw.column("s2").to_pylist()) > 0
    assert read_sts_table(shared_data / "stsbenchmark" / "sts-test.csv").num_rows == 1379


def test_sts_table_with_header(tmp_path: Path) -> None:
    csv_file = tmp_path / "pairs.csv"
    csv_file.write_text('sentence1,sentence2,score\n"A, b.",C.,4.5\n')
    assert read_sts_table(csv_file).to_pylist() == [
        {"task": "pairs", "s1": "A, b.", "s2": "C.", "score": 4.5}
    ]
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text('left\tright\tsim\n"Quoted\tplain\t2\n')
    with pytest.raises(InputError, match="cannot tell"):
        read_sts_table(tsv)
    assert read_sts_table(tsv, columns=["left", "right", "sim"]).column("s1").to_pylist() == [
        '"Quoted'
    ]
    with pytest.raises(InputError, match=r"\['other'\] not in the header"):
        read_sts_table(tsv, columns=["left", "other", "sim"])
    with pytest.raises(InputError, match="not found"):
        read_sts_table(tmp_path / "absent.csv")


def test_sick_full_file(shared_data: Path) -> None:
    table = read_sick(shared_data / "sick" / "SICK.txt")
    assert table.schema.equals(SICK_SCHEMA)
    assert table.num_rows == 9840
    splits = table.column("split").to_pylist()
    assert (splits.count("TRAIN"), splits.count("TRIAL"), splits.count("TEST")) == (4439, 495, 4906)
    first = table.slice(0, 1).to_pylist()[0]
    assert first == {
        "pair_id": 1,
        "s1": "A group of kids is playing in a yard and an old man is standing in the background",
        "s2": "A group of boys in a yard is playing and a man is standing in the background",
        "relatedness": 4.5,
        "entailment_label": "NEUTRAL",
        "split": "TRAIN",
    }
    assert not any(s.endswith("\r") for s in table.column("split").to_pylist())


def test_sick_split_files_without_header(shared_data: Path, tmp_path: Path) -> None:
    folder = shared_data / "sick" / "semeval2014_splits_noheader"
    train = read_sick(folder / "SICK_train.txt")
    assert train.num_rows == 4500
    assert set(train.column("split").to_pylist()) == {"TRAIN"}
    assert read_sick(folder / "SICK_test_annotated.txt").num_rows == 4927
    full = read_sick(shared_data / "sick" / "SICK.txt")
    by_id = {r["pair_id"]: r for r in full.to_pylist()}
    for row in train.slice(0, 50).to_pylist():
        if row["pair_id"] in by_id:
            assert (row["s1"], row["relatedness"]) == (
                by_id[row["pair_id"]]["s1"],
                by_id[row["pair_id"]]["relatedness"],
            )
    headed = tmp_path / "mine.txt"
    headed.write_text(
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n7\tA\tB\t3.1\tNEUTRAL\n"
    )
    assert read_sick(headed).to_pylist()[0]["split"] is None
    broken = tmp_path / "broken.txt"
    broken.write_text("pair_ID\tsentence_A\trelatedness_score\n")
    with pytest.raises(InputError, match="sentence_B"):
        read_sick(broken)


def test_mrpc(shared_data: Path, tmp_path: Path) -> None:
    train = read_mrpc(shared_data / "mrpc" / "msr_paraphrase_train.txt")
    assert train.schema.equals(MRPC_SCHEMA)
    assert train.num_rows == 4076
    assert pa.compute.sum(train["label"]).as_py() == 2753
    first = train.slice(0, 1).to_pylist()[0]
    assert (
        first["s1"]
        == 'Amrozi accused his brother, whom he called "the witness", of deliberately distorting his evidence.'
    )
    assert not first["s2"].endswith("\r")
    test = read_mrpc(shared_data / "mrpc" / "msr_paraphrase_test.txt")
    assert (test.num_rows, pa.compute.sum(test["label"]).as_py()) == (1725, 1147)
    bad = tmp_path / "m.txt"
    bad.write_text("1\t2\t3\ta\tb\n")
    with pytest.raises(InputError, match="MRPC header"):
        read_mrpc(bad)


def test_nli_csv(shared_data: Path, tmp_path: Path) -> None:
    table = read_nli_csv(shared_data / "nli" / "nli_triples_snli_devtest.csv")
    assert table.schema.equals(NLI_TRIPLE_SCHEMA)
    assert table.num_rows == 5883
    assert table.slice(0, 1).to_pylist()[0] == {
        "premise": "Two women are embracing while holding to go packages .",
        "entailment": "Two woman are holding packages .",
        "contradiction": "The men are fighting outside a deli .",
    }
    bad = tmp_path / "nli.csv"
    bad.write_text("premise,hypothesis\na,b\n")
    with pytest.raises(InputError, match=r"\['sent0', 'sent1'\].*sent0,sent1,hard_neg"):
        read_nli_csv(bad)


def test_snli_senteval_and_the_triple_rule(shared_data: Path, tmp_path: Path) -> None:
    folder = shared_data / "nli" / "snli_senteval"
    dev = read_snli_senteval(folder, "dev")
    assert dev.schema.equals(NLI_PAIR_SCHEMA)
    assert dev.num_rows == 9842
    assert set(dev.column("label").to_pylist()) == {"entailment", "neutral", "contradiction"}
    assert (
        dev.slice(0, 1).to_pylist()[0]["premise"]
        == "Two women are embracing while holding to go packages ."
    )
    test = read_snli_senteval(folder, "test")
    assert test.num_rows == 9824
    # the shared derived csv was built by this rule from dev then test
    triples = pa.concat_tables([nli_triples(dev), nli_triples(test)])
    assert (
        triples.to_pylist()
        == read_nli_csv(shared_data / "nli" / "nli_triples_snli_devtest.csv").to_pylist()
    )
    with pytest.raises(InputError, match=r"s1\.train"):
        read_snli_senteval(folder, "train")
    (tmp_path / "s1.x").write_text("a\nb\n")
    (tmp_path / "s2.x").write_text("c\n")
    (tmp_path / "labels.x").write_text("neutral\n")
    with pytest.raises(InputError, match="differ in length"):
        read_snli_senteval(tmp_path, "x")
