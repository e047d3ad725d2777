"""Pattern sources and the fixed example draw (NGCSE step 1), on the real shared files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from cseaug.config import PatternConfig, config_fingerprint, load_config
from cseaug.errors import ConfigError
from cseaug.patterns import PAPER_EXAMPLES, STS_LEVELS, draw, load_examples
from cseaug.readers.benchmarks import read_nli_csv, read_sts_dir

REPO = Path(__file__).resolve().parents[1]


def test_sts12_draw_respects_thresholds_and_is_stable(shared_data: Path) -> None:
    cfg = PatternConfig(source="sts12", path=str(shared_data / "sts12_train"), seed=7)
    examples = load_examples(cfg, "sts")
    assert examples.kind == "sts"
    assert tuple(examples.levels) == STS_LEVELS
    scores = {
        (r["s1"], r["s2"]): r["score"]
        for r in read_sts_dir(shared_data / "sts12_train").to_pylist()
    }
    for pair in examples.levels["positive"]:
        assert scores[pair] > 4
    for pair in examples.levels["intermediate"]:
        assert 1 <= scores[pair] <= 4
    for pair in examples.levels["negative"]:
        assert scores[pair] < 1
    assert all(len(pairs) == 3 for pairs in examples.levels.values())
    assert load_examples(cfg, "sts") == examples
    other = load_examples(cfg.model_copy(update={"seed": 8}), "sts")
    assert other.levels != examples.levels


def test_draw_is_a_sha256_order_independent_of_input_order() -> None:
    items = [(f"s{i}", f"t{i}") for i in range(50)]
    expected = sorted(
        items, key=lambda it: hashlib.sha256("\x00".join(("3", *it)).encode()).hexdigest()
    )[:4]
    assert draw(items, 4, 3) == expected
    assert draw(list(reversed(items)) + items[:5], 4, 3) == expected


def test_manifest_is_json_and_hashes_the_source_files(shared_data: Path) -> None:
    folder = shared_data / "sts12_train"
    examples = load_examples(PatternConfig(source="sts12", path=str(folder)), "sts")
    manifest = json.loads(json.dumps(examples.as_manifest()))
    assert manifest["source"] == "sts12"
    assert manifest["seed"] == 0
    gold = str(folder / "STS.gs.MSRvid.txt")
    assert manifest["files"][gold] == hashlib.sha256(Path(gold).read_bytes()).hexdigest()
    assert len(manifest["files"]) == 6
    assert [len(v) for v in manifest["examples"].values()] == [3, 3, 3]
    assert manifest["candidates"]["positive"] > 100


def test_stsb_table_source(shared_data: Path) -> None:
    path = shared_data / "stsbenchmark" / "sts-dev.csv"
    examples = load_examples(PatternConfig(source="sts_table", path=str(path), k=5, seed=1), "sts")
    assert [len(examples.levels[level]) for level in STS_LEVELS] == [5, 5, 5]


def test_nli_sources_draw_triples(shared_data: Path) -> None:
    csv_path = shared_data / "nli" / "nli_triples_snli_devtest.csv"
    examples = load_examples(PatternConfig(source="nli_csv", path=str(csv_path), seed=3), "nli")
    assert tuple(examples.levels) == ("positive", "negative")
    triples = {
        (r["premise"], r["entailment"], r["contradiction"])
        for r in read_nli_csv(csv_path).to_pylist()
    }
    for (premise, entailment), (premise_n, contradiction) in zip(
        examples.levels["positive"], examples.levels["negative"], strict=True
    ):
        assert premise == premise_n
        assert (premise, entailment, contradiction) in triples
    senteval = load_examples(
        PatternConfig(
            source="snli_senteval", path=str(shared_data / "nli" / "snli_senteval"), seed=3
        ),
        "nli",
    )
    # the same triples, so the same seed draws the same examples
    assert senteval.levels == examples.levels
    assert len(senteval.files) == 6


def test_paper_examples_and_k() -> None:
    sts = load_examples(PatternConfig(source="paper"), "sts")
    assert sts.levels == PAPER_EXAMPLES["sts"]
    assert sts.as_manifest()["path"] is None
    nli = load_examples(PatternConfig(source="paper", k=2), "nli")
    assert [len(v) for v in nli.levels.values()] == [2, 2]
    with pytest.raises(ConfigError, match="prints 3 examples"):
        load_examples(PatternConfig(source="paper", k=4), "sts")


def test_errors_name_level_counts_and_paths(shared_data: Path, tmp_path: Path) -> None:
    table = tmp_path / "few.tsv"
    table.write_text("sentence1\tsentence2\tscore\na\tb\t4.5\nc\td\t0.5\ne\tf\t0.2\ng\th\t2\n")
    with pytest.raises(ConfigError, match=r"'positive' \(1 < k=3\).*'negative' \(2 < k=3\)"):
        load_examples(PatternConfig(source="sts_table", path=str(table)), "sts")
    with pytest.raises(ConfigError, match="gives STS examples but method is 'nli'"):
        load_config(REPO / "configs" / "wiki-nli.yaml", ["patterns.source=sts12"])
    with pytest.raises(ConfigError, match=r"patterns\.path is required"):
        load_examples(PatternConfig(source="sts12"), "sts")
    with pytest.raises(ConfigError, match="does not exist"):
        load_examples(PatternConfig(source="nli_csv", path=str(tmp_path / "absent.csv")), "nli")
    nli = tmp_path / "nli.csv"
    nli.write_text("sent0,sent1,hard_neg\np,e,c\np,e,c\n")
    with pytest.raises(ConfigError, match="1 complete NLI triples"):
        load_examples(PatternConfig(source="nli_csv", path=str(nli)), "nli")


def test_longer_first_orients_the_drawn_intermediate_pairs_as_the_prompt_describes(
    shared_data: Path,
) -> None:
    """'Sentence 2 is created by omitting details from Sentence 1': with longer-first the
    same pairs are drawn and Sentence 1 is the longer; the default keeps the file's order."""
    cfg = PatternConfig(source="sts12", path=str(shared_data / "sts12_train"), seed=0)
    as_filed = load_examples(cfg, "sts").levels
    oriented = load_examples(cfg.model_copy(update={"intermediate_order": "longer-first"}), "sts")
    words = [(len(a.split()), len(b.split())) for a, b in as_filed["intermediate"]]
    assert any(first < second for first, second in words)  # seed 0 draws one the other way
    assert [sorted(p) for p in oriented.levels["intermediate"]] == [
        sorted(p) for p in as_filed["intermediate"]
    ]
    assert all(len(a.split()) >= len(b.split()) for a, b in oriented.levels["intermediate"])
    assert oriented.levels["positive"] == as_filed["positive"]  # only the intermediate level
    assert oriented.levels["negative"] == as_filed["negative"]
    wiki = REPO / "configs" / "wiki-sts.yaml"
    longer = ["patterns.intermediate_order=longer-first"]
    assert config_fingerprint(load_config(wiki)) != config_fingerprint(load_config(wiki, longer))
