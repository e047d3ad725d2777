"""Exports carry what each paper's objective needs, and the shipped configs write them.

One test per defect found by reading the exports against the papers (issue 10): SKICSE's
quadruplets (x, x+, x-, x_ski), NGCSE's hybrid NLI datasets (generated rows plus the rest
of the corpus), OssCSE (every sentence, and (s^p, s^n) where they exist), Generate-CSE
(one view per training epoch). The NGCSE key layout is checked through the authors' own
forward-pass indexing in test_exports.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cseaug.config import load_config
from cseaug.dataset.export import HYBRID_FILES, export_version, write_configured_exports
from cseaug.dataset.reader import read_rows
from cseaug.dataset.staging import publish_version
from tests.canonical_rows import make_generate_cse_rows

REPO = Path(__file__).resolve().parents[2]


def _version(tmp_path: Path, manifest, tables) -> Path:
    return publish_version(
        tables, [], root=tmp_path / "storage", name="demo", manifest=manifest, heldout_fraction=0.0
    ).path


def _rows(version: Path) -> list[dict]:
    return read_rows(version).to_pylist()


def _csv(path: Path, hf_cache: Path):
    from datasets import load_dataset

    return load_dataset("csv", data_files={"train": str(path)}, cache_dir=str(hf_cache))["train"]


def _configured(version: Path, config: str, tmp_path: Path):
    exports = load_config(REPO / "configs" / f"{config}.yaml").output.exports
    return write_configured_exports(version, exports, tmp_path / "storage")


def _exported_sentences(result) -> list[str]:
    """Every anchor an export wrote, whatever its format."""
    if result.layout == "hybrid" and result.format == "sentence-transformers":
        return [
            s
            for name in HYBRID_FILES.values()
            for s in pq.read_table(result.path / name).column("anchor").to_pylist()
        ]
    if result.format in ("ngcse", "jsonl"):
        lines = result.path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line)["sentence"] for line in lines]
    table = pq.read_table(result.path) if result.path.suffix == ".parquet" else None
    return table.column(0).to_pylist() if table is not None else []


# -- SKICSE (x, x+, x-, x_ski) ---------------------------------------------------------------
def test_ski_quadruplets_keep_the_knowledge(
    tmp_path: Path, manifest, rows_factory, hf_cache
) -> None:
    quads = rows_factory(12, 0, views=("positive", "negative", "knowledge"), method="ski")
    version = _version(tmp_path, manifest, [quads])
    rows = _rows(version)

    simcse = export_version(version, "simcse", tmp_path / "skicse.csv")
    loaded = _csv(simcse.path, hf_cache)
    assert simcse.layout == "quadruplet"
    assert loaded.column_names == ["sent0", "sent1", "hard_neg", "knowledge"]
    assert [list(r.values()) for r in loaded] == [
        [r["sentence"], r["positive"], r["negative"], r["knowledge"]] for r in rows
    ]
    st = export_version(version, "sentence-transformers", tmp_path / "skicse.parquet")
    assert pq.read_table(st.path).to_pylist() == [
        {"anchor": r["sentence"], "positive": r["positive"], "negative": r["negative"],
         "knowledge": r["knowledge"]}
        for r in rows
    ]  # fmt: skip
    jsonl = export_version(version, "jsonl", tmp_path / "skicse.jsonl")
    lines = [json.loads(x) for x in jsonl.path.read_text(encoding="utf-8").splitlines()]
    assert [x["knowledge"] for x in lines] == [r["knowledge"] for r in rows]


def test_triplets_of_quadruplet_rows_say_the_knowledge_was_dropped(
    tmp_path: Path, manifest, rows_factory
) -> None:
    quads = rows_factory(5, 0, views=("positive", "negative", "knowledge"), method="ski")
    version = _version(tmp_path, manifest, [quads])
    result = export_version(version, "simcse", tmp_path / "t.csv", layout="triplet")
    assert result.skipped == {"knowledge_views_not_exported": 5}
    assert any("--layout quadruplet" in note for note in result.notes)


def test_nli_ski_config_exports_keep_x_ski(tmp_path: Path, manifest, rows_factory) -> None:
    quads = rows_factory(10, 0, views=("positive", "negative", "knowledge"), method="ski")
    version = _version(tmp_path, manifest, [quads])
    results = _configured(version, "nli-ski", tmp_path)
    assert results
    for result in results:
        assert "knowledge" in result.columns, result.format
        assert "knowledge_views_not_exported" not in result.skipped


# -- NGCSE hybrids: generated rows plus the rest of the corpus -------------------------------
@pytest.mark.parametrize("config", ["wiki-nli", "nli-nli", "wiki-sts", "nli-sts"])
def test_ngcse_configs_export_hybrids_that_keep_the_other_rows(
    tmp_path: Path, manifest, rows_factory, config: str
) -> None:
    method = "nli" if config.endswith("nli") else "sts"
    views = (
        ("positive", "negative") if method == "nli" else ("positive", "intermediate", "negative")
    )
    version = _version(tmp_path, manifest, [rows_factory(10, 90, views=views, method=method)])
    sentences = sorted(r["sentence"] for r in _rows(version))
    results = _configured(version, config, tmp_path)
    assert {r.format for r in results} >= {"ngcse", "sentence-transformers"}
    for result in results:
        assert sorted(_exported_sentences(result)) == sentences, result.format


def test_sentence_transformers_hybrid_is_one_file_per_training_set(
    tmp_path: Path, manifest, rows_factory
) -> None:
    nli = rows_factory(6, 9, views=("positive", "negative"), method="nli")
    version = _version(tmp_path, manifest, [nli])
    rows = _rows(version)
    result = export_version(version, "sentence-transformers", tmp_path / "st", layout="hybrid")
    aigen = pq.read_table(result.path / "aigen.parquet").to_pylist()
    other = pq.read_table(result.path / "other.parquet").to_pylist()
    assert aigen == [
        {"anchor": r["sentence"], "positive": r["positive"], "negative": r["negative"]}
        for r in rows
        if r["split"] == "aigen"
    ]
    assert other == [
        {"anchor": r["sentence"], "positive": r["sentence"]} for r in rows if r["split"] == "other"
    ]
    assert result.parts == {"aigen": 6, "other": 9} and result.rows == 15


@pytest.mark.slow
def test_sentence_transformers_trains_on_the_hybrid(
    tmp_path: Path, manifest, rows_factory, tiny_bert, hf_cache
) -> None:
    from datasets import DatasetDict, load_dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    version = _version(tmp_path, manifest, [rows_factory(8, 8)])
    result = export_version(version, "sentence-transformers", tmp_path / "st", layout="hybrid")
    train = DatasetDict(
        {
            group: load_dataset(
                "parquet",
                data_files=str(result.path / name),
                split="train",
                cache_dir=str(hf_cache),
            )
            for group, name in HYBRID_FILES.items()
        }
    )
    assert train["aigen"].column_names == ["anchor", "positive", "intermediate", "negative"]
    model = SentenceTransformer(modules=[Transformer(str(tiny_bert)), Pooling(16)], device="cpu")
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=4, per_device_train_batch_size=4,
        report_to="none", use_cpu=True, save_strategy="no", disable_tqdm=True,
    )  # fmt: skip
    loss = MultipleNegativesRankingLoss(model)
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=train, loss={"aigen": loss, "other": loss}
    )
    assert trainer.train().global_step == 4


# -- OssCSE: every corpus sentence, and (s^p, s^n) where they exist --------------------------
def test_osscse_config_keeps_every_sentence_and_its_pairs(
    tmp_path: Path, manifest, rows_factory, hf_cache
) -> None:
    from datasets import load_dataset

    osscse = rows_factory(7, 13, views=("positive", "negative"), method="osscse")
    version = _version(tmp_path, manifest, [osscse])
    rows = _rows(version)
    results = _configured(version, "wiki-osscse", tmp_path)
    assert results
    for result in results:
        assert sorted(_exported_sentences(result)) == sorted(r["sentence"] for r in rows)
    jsonl = next(r for r in results if r.format == "jsonl")
    loaded = load_dataset(
        "json", data_files=str(jsonl.path), split="train", cache_dir=str(hf_cache)
    )
    pairs = {r["sentence"]: (r["positive"], r["negative"]) for r in loaded}
    assert pairs == {r["sentence"]: (r["positive"], r["negative"]) for r in rows}


# -- Generate-CSE: one view per epoch --------------------------------------------------------
def test_generate_cse_exports_every_epoch_view(tmp_path: Path, manifest, hf_cache) -> None:
    version = _version(tmp_path, manifest, [make_generate_cse_rows(6, 3)])
    results = _configured(version, "generate-cse", tmp_path)
    by_epoch = {(r.format, r.epoch): r for r in results}
    for fmt in ("simcse", "sentence-transformers"):
        assert {epoch for f, epoch in by_epoch if f == fmt} == {0, 1, 2}
    for (fmt, epoch), result in by_epoch.items():
        if fmt == "simcse":
            positives = _csv(result.path, hf_cache)["sent1"]
        elif fmt == "sentence-transformers":
            positives = pq.read_table(result.path).column("positive").to_pylist()
        else:
            continue
        assert positives == [f"view {epoch} of {i}" for i in range(6)], (fmt, epoch)
    jsonl = next(r for r in results if r.format == "jsonl")
    first = json.loads(jsonl.path.read_text(encoding="utf-8").splitlines()[0])
    assert [a["text"] for a in first["augmentations"]] == [f"view {k} of 0" for k in range(3)]


def test_an_epoch_without_views_is_an_error_naming_the_views(tmp_path: Path, manifest) -> None:
    from cseaug.errors import InputError

    version = _version(tmp_path, manifest, [make_generate_cse_rows(4, 2)])
    with pytest.raises(InputError, match=r"views are 0\.\.1"):
        export_version(version, "simcse", tmp_path / "x.csv", epoch=5)


# -- the shipped configs are the papers' settings --------------------------------------------
def test_shipped_configs_use_the_papers_data_sizes() -> None:
    wiki_ski = load_config(REPO / "configs" / "wiki-ski.yaml")
    assert wiki_ski.sample.size == 10**6  # SKICSE section 4.1: 10^6 Wikipedia sentences
    generate = load_config(REPO / "configs" / "generate-cse.yaml")
    assert generate.sample.size == 70_400  # VAEGPT-Sim section 4.2.1: 70.4k sentences
    assert generate.sample.include_other is False  # ... and nothing else


def test_readme_names_the_data_paths_the_configs_read() -> None:
    import yaml

    def data_paths(node) -> list[str]:
        if isinstance(node, dict):
            return [p for value in node.values() for p in data_paths(value)]
        if isinstance(node, list):
            return [p for value in node for p in data_paths(value)]
        return [node] if isinstance(node, str) and node.startswith("data/") else []

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    configs = [*(REPO / "configs").glob("*.yaml"), *(REPO / "configs").glob("*/*.yaml")]
    missing = {
        path
        for config in configs
        for path in data_paths(yaml.safe_load(config.read_text()))
        if path not in readme
    }
    assert not missing, f"README's Data section does not name {sorted(missing)}"
