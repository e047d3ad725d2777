"""The card: a YAML header `datasets` understands, and the facts of the version."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cseaug.dataset.card import CITATIONS, card_header, render_card
from cseaug.dataset.reader import read_rows
from cseaug.dataset.staging import publish_version


def test_load_dataset_reads_exactly_the_data_rows_offline(
    tmp_path: Path, manifest, rows_factory, rejects_factory, hf_cache
) -> None:
    datasets = pytest.importorskip("datasets")

    def diagnostics(staging: Path) -> None:  # files beside the data must not become rows
        (staging / "diagnostics").mkdir()
        (staging / "diagnostics" / "histograms.parquet").write_bytes(
            (staging / "rejects.parquet").read_bytes()
        )
        (staging / "diagnostics" / "stats.csv").write_text("a,b\n1,2\n")

    published = publish_version(
        [rows_factory(30, 45)], [rejects_factory(12)], root=tmp_path, name="demo", manifest=manifest,
        rows_per_file=20, before_publish=diagnostics,
    )  # fmt: skip
    loaded = datasets.load_dataset(str(published.path))
    assert list(loaded) == ["train", "heldout"]  # held-out rows are their own split
    train, heldout = loaded["train"], loaded["heldout"]
    held = published.manifest["counts"]["heldout"]
    assert 0 < held < 75 and heldout.num_rows == held and train.num_rows == 75 - held
    assert not any(train["heldout"]) and all(heldout["heldout"])
    expected = read_rows(published.path)
    assert train.column_names == expected.column_names
    assert list(heldout["id"]) + list(train["id"]) == expected.column("id").to_pylist()
    assert (
        list(heldout["sentence"]) + list(train["sentence"])
        == expected.column("sentence").to_pylist()
    )
    # the split comes from the card's header, as parsed by datasets itself
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    data = DatasetCard.load(published.path / "README.md").data
    configs = MetadataConfigs.from_dataset_card_data(data)
    # what the Hub shows: licence (the sources'), task, sources, the model that wrote the views
    assert (data.license, data.task_categories) == ("unknown", ["sentence-similarity"])
    assert data.source_datasets == ["corpus"] and data.cseaug_model.startswith("tiny")
    name = f"demo-v0001-{published.manifest['fingerprints']['data'][:8]}"
    splits = [{"split": "train", "path": "data/train-*"}]
    splits.append({"split": "heldout", "path": "data/heldout-*"})
    assert configs == {name: {"data_files": splits, "default": True}}


def test_load_dataset_returns_each_v0001_of_two_datasets_from_one_cache(
    tmp_path: Path, manifest, rows_factory, hf_cache
) -> None:
    """Two datasets' v0001 loaded in one cache: each gives its own rows, in either order,
    also when loaded again (a `default` config made them one cache entry: the second load
    returned the first dataset's rows)."""
    datasets = pytest.importorskip("datasets")
    first = publish_version(
        [rows_factory(3, 4)], [], root=tmp_path, name="cli-sts", manifest=manifest
    )
    second = publish_version(
        [rows_factory(10, 5)], [], root=tmp_path, name="wiki-sts", manifest=manifest
    )
    assert first.version == second.version == "v0001"
    for published in (first, second, first, second):
        loaded = datasets.load_dataset(str(published.path))
        ids = [i for split in ("heldout", "train") if split in loaded for i in loaded[split]["id"]]
        assert ids == read_rows(published.path).column("id").to_pylist()
    card = (second.path / "README.md").read_text()
    name = f"wiki-sts-v0001-{second.manifest['fingerprints']['data'][:8]}"
    assert f'datasets.load_dataset("<this directory or Hub repo>", "{name}")' in card
    assert datasets.load_dataset(str(second.path), name, split="train").num_rows == 14


def test_card_body_has_counts_rejects_method_and_citations(
    tmp_path: Path, manifest, rows_factory, rejects_factory
) -> None:
    published = publish_version(
        [rows_factory(3, 4)],
        [rejects_factory(3)],
        root=tmp_path,
        name="demo",
        manifest=manifest,
    )
    card = (published.path / "README.md").read_text()
    header = yaml.safe_load(card.split("---")[1])
    assert header["configs"] == [
        {
            "config_name": f"demo-v0001-{published.manifest['fingerprints']['data'][:8]}",
            "data_files": [{"split": "train", "path": "data/train-*"}],
            "default": True,
        }
    ]
    assert "| 7 | 3 | 4 |" in card
    assert "| llm | too_short | 1 |" in card and "| corpus | empty | 1 |" in card
    assert "Method: `sts`" in card and "Model: `tiny`" in card and "sts_positive" in card
    assert CITATIONS["ngcse"] in card and CITATIONS["osscse"] in card
    assert "(by a hash of `id`): 10% in this version" in card  # publish_version's default share


@pytest.mark.parametrize(
    ("method", "paper"), [("ski", "skicse"), ("osscse", "osscse"), ("generate_cse", "vaegpt_sim")]
)
def test_each_method_cites_its_paper(method: str, paper: str) -> None:
    card = render_card(
        {"dataset": "d", "version": "v0001", "method": method, "counts": {"rows": 5}}
    )
    assert CITATIONS[paper] in card


def test_citations_match_the_paper_files(shared_papers: Path) -> None:
    texts = {p.name: p.read_text(encoding="utf-8") for p in shared_papers.glob("0*.txt")}
    titles = {
        "ngcse": "Narrowing the Gap between Supervised and Unsupervised Sentence Representation Learning with Large Language Model",
        "osscse": "OssCSE: Overcoming Surface Structure Bias in Contrastive Learning for Unsupervised Sentence Embedding",
        "skicse": "SKICSE: Sentence Knowable Information Prompted by LLMs Improves Contrastive Sentence Embeddings",
        "vaegpt_sim": "VAEGPT-Sim: Improving Sentence Representation with Limited Corpus Using Gradually-Denoising VAE",
    }
    for key, title in titles.items():
        assert title in CITATIONS[key]
        assert any(title in text for text in texts.values()), title


def test_size_categories() -> None:
    def size_category(rows: int) -> list[str]:
        return card_header({"counts": {"rows": rows}})["size_categories"]

    assert size_category(0) == ["n<1K"] and size_category(20_000) == ["10K<n<100K"]
    assert size_category(1_000_000) == ["1M<n<10M"]
    assert size_category(5000) == ["1K<n<10K"]


def test_a_version_of_held_out_rows_only_loads_as_one_heldout_split(
    tmp_path: Path, manifest, rows_factory, hf_cache
) -> None:
    """No empty train file beside them: `datasets` cannot read a Parquet file without rows."""
    datasets = pytest.importorskip("datasets")
    published = publish_version(
        [rows_factory(3, 2)], [], root=tmp_path, name="demo", manifest=manifest,
        heldout_fraction=0.999999,
    )  # fmt: skip
    assert published.manifest["counts"]["heldout"] == 5
    assert [p.name for p in (published.path / "data").iterdir()] == [
        "heldout-00000-of-00001.parquet"
    ]
    loaded = datasets.load_dataset(str(published.path))
    assert list(loaded) == ["heldout"] and loaded["heldout"].num_rows == 5
