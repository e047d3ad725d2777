"""Verbatim overlap with the STS / SICK evaluation sets, after normalisation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cseaug.dataset.schema import rows_table
from cseaug.diagnostics.contamination import (
    ContaminationCounter,
    contamination_filter,
    eval_set_readers,
    load_eval_index,
    normalize_text,
)
from cseaug.errors import InputError
from tests.diagnostics.diag_helpers import canonical


def test_normalisation_ignores_tokenisation_case_entities_and_punctuation():
    raw = 'He said "don\'t go" & left.'
    senteval = "he said &quot; don 't go &quot; &amp; left ."
    assert normalize_text(raw) == normalize_text(senteval) == "he said don t go left"
    assert normalize_text("Ｆｕｌｌ　ｗｉｄｔｈ") == "full width"
    assert normalize_text("A cat sat.") != normalize_text("A cat sat on the mat.")


@pytest.fixture
def eval_dir(tmp_path: Path) -> Path:
    """A miniature shared/data: STS12 (one task, one unscored pair), STS-B dev/test, SICK.txt."""
    sts = tmp_path / "senteval_sts" / "STS12-en-test"
    sts.mkdir(parents=True)
    (sts / "STS.input.MSRvid.txt").write_text(
        "a man is playing a flute .\ta man plays a flute .\nunscored left .\tunscored right .\n"
    )
    (sts / "STS.gs.MSRvid.txt").write_text("4.2\n\n")
    stsb = tmp_path / "stsbenchmark"
    stsb.mkdir()
    line = "main-captions\tMSRvid\t2012test\t{id}\t{score}\t{a}\t{b}\n"
    (stsb / "sts-dev.csv").write_text(
        line.format(id="0001", score="5.000", a="A plane is taking off.", b="A jet takes off.")
    )
    (stsb / "sts-test.csv").write_text(
        line.format(id="0002", score="0.500", a="A dog runs.", b="The stock fell.")
    )
    (stsb / "sts-train.csv").write_text(
        line.format(id="0003", score="3.000", a="Training only.", b="Also training.")
    )
    sick = tmp_path / "sick"
    sick.mkdir()
    header = "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tSemEval_set\n"
    (sick / "SICK.txt").write_text(
        header
        + "1\tKids play in a yard\tChildren play outside\tNEUTRAL\t4.5\tTEST\n"
        + "2\tA sick train pair\tAnother train pair\tNEUTRAL\t3.0\tTRAIN\n"
    )
    return tmp_path


def test_index_reads_scored_pairs_dev_test_and_the_sick_test_split(eval_dir):
    index = load_eval_index(eval_dir)
    assert index.sets == ["STS12", "STSB-dev", "STSB-test", "SICK-test"]
    assert index.missing == ["STS13", "STS14", "STS15", "STS16"]
    assert index.sizes == {"STS12": 2, "STSB-dev": 2, "STSB-test": 2, "SICK-test": 2}
    masks = index.match(
        ["A man is playing a flute.", "Unscored left.", "Training only.", "A sick train pair", None]
    )
    assert index.names(int(masks[0])) == ["STS12"]
    assert masks[1:].tolist() == [0, 0, 0, 0]
    assert index.names(int(index.match(["kids play in a yard!"])[0])) == ["SICK-test"]


def test_a_sentence_in_several_sets_names_them_all(eval_dir):
    line = "main-captions\tMSRvid\t2012test\t0009\t4.0\ta man plays a flute .\tx\n"
    (eval_dir / "stsbenchmark" / "sts-test.csv").write_text(line)
    index = load_eval_index(eval_dir)
    assert index.names(int(index.match(["A man plays a flute"])[0])) == ["STS12", "STSB-test"]


ROWS = [
    {"sentence": "A man is playing a flute.", "positive": "Someone plays music."},
    {"sentence": "A clean anchor.", "negative": "A plane is taking off."},
    {"sentence": "Another clean anchor.", "positive": "Nothing to see."},
    {"sentence": "Kids play in a yard"},
]


def test_counter_reports_fields_sets_and_examples(eval_dir):
    counter = ContaminationCounter(load_eval_index(eval_dir), "any")
    table = rows_table(canonical(ROWS))
    combined, masks = counter.add(table.slice(0, 2))
    counter.add(table.slice(2))
    assert combined.tolist()[0] != 0 and masks["negative"].tolist()[1] != 0
    report = counter.to_dict()
    assert report["rows"] == 4 and report["contaminated_rows"] == 3
    assert report["share"] == pytest.approx(0.75)
    assert report["by_field"] == {
        "sentence": 2,
        "positive": 0,
        "intermediate": 0,
        "negative": 1,
        "knowledge": 0,
    }
    assert report["by_eval_set"] == {"STS12": 1, "STSB-dev": 1, "STSB-test": 0, "SICK-test": 1}
    assert report["examples"][1]["fields"] == {"negative": ["STSB-dev"]}


def test_anchor_only_ignores_contaminated_views(eval_dir):
    counter = ContaminationCounter(load_eval_index(eval_dir), "anchor")
    counter.add(rows_table(canonical(ROWS)))
    assert counter.contaminated_rows == 2 and set(counter.by_field) == {"sentence"}


def test_filter_moves_contaminated_rows_to_rejects(eval_dir):
    result = contamination_filter(rows_table(canonical(ROWS)), load_eval_index(eval_dir), "any")
    assert result.rows.column("sentence").to_pylist() == ["Another clean anchor."]
    rejects = result.rejects.to_pylist()
    assert [r["reason"] for r in rejects] == ["contamination"] * 3
    assert [r["view"] for r in rejects] == [None, "negative", None]
    assert json.loads(rejects[1]["detail"]) == {"negative": ["STSB-dev"]}
    assert result.stats["contaminated_rows"] == 3
    anchor_only = contamination_filter(
        rows_table(canonical(ROWS)), load_eval_index(eval_dir), "anchor"
    )
    assert anchor_only.rows.num_rows == 2


def test_a_directory_without_evaluation_sets_is_an_error(tmp_path):
    with pytest.raises(InputError, match="no evaluation set"):
        eval_set_readers(tmp_path)
    with pytest.raises(InputError, match="not found"):
        eval_set_readers(tmp_path / "absent")


@pytest.mark.shared_data
def test_the_shared_evaluation_sets_are_all_found(shared_data):
    index = load_eval_index(shared_data)
    assert index.missing == []
    assert set(index.sizes) == {
        "STS12",
        "STS13",
        "STS14",
        "STS15",
        "STS16",
        "STSB-dev",
        "STSB-test",
        "SICK-test",
    }
    # Raw text matches SentEval's lower-cased, tokenised copy of STS-B test.
    first = (shared_data / "stsbenchmark" / "sts-test.csv").read_text().split("\n")[0].split("\t")
    assert "STSB-test" in index.names(int(index.match([first[5]])[0]))
