"""Each export loads unchanged through the loading code of the trainer it is for.

The loaders below restate, call for call, what the trainers do with a train file:

* SimCSE: princeton-nlp/SimCSE ``train.py``, ``main()``: ``load_dataset(extension, data_files,
  delimiter="\\t" if "tsv" in path else ",")``, layout by the number of columns, ``None`` -> ``" "``
  inside ``prepare_features``, ``.map(batched=True, remove_columns=column_names)``.
* NGCSE: BDBC-KG-NLP/NGCSE ``train.py``, ``main()``: ``load_dataset("json", data_files)``,
  optional ``filter(split == "aigen")`` (``--only_aigen``), ``.map(PrepareFeatures(...), batched=True,
  remove_columns=all but 'split')``; ``ngcse/utils.py`` ``PrepareFeatures.__call__``: the key set of
  each split comes from the keys that are not ``''`` in its first row, among
  ``['sentence', '5', '4', '3', '2', '1', '0']``; a single-key ``other`` row is used twice.
* sentence-transformers: ``SentenceTransformerTrainer`` with ``MultipleNegativesRankingLoss`` on the
  ``datasets.Dataset`` loaded from the Parquet file (a real training step on a tiny model).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from cseaug.config import ExportConfig
from cseaug.dataset.export import (
    NGCSE_KEYS,
    default_export_path,
    export_version,
    write_configured_exports,
)
from cseaug.dataset.reader import read_rows
from cseaug.dataset.schema import row_id, rows_table
from cseaug.dataset.staging import publish_version
from cseaug.errors import InputError


def _version(tmp_path: Path, manifest, tables, **kwargs) -> Path:
    return publish_version(
        tables, [], root=tmp_path / "storage", name="demo", manifest=manifest, **kwargs
    ).path


def _expected(version_dir: Path, split: str = "train") -> list[dict]:
    rows = read_rows(version_dir).to_pylist()
    return [r for r in rows if split == "all" or r["heldout"] == (split == "heldout")]


# -- SimCSE ----------------------------------------------------------------------------------
def simcse_load(train_file: str, tokenizer, cache_dir: Path):
    """SimCSE train.py's data path: load, pick columns by count, prepare features."""
    from datasets import load_dataset

    extension = train_file.split(".")[-1]
    if extension == "txt":
        extension = "text"
    if extension == "csv":
        raw = load_dataset(extension, data_files={"train": train_file}, cache_dir=str(cache_dir),
                           delimiter="\t" if "tsv" in train_file else ",")  # fmt: skip
    else:
        raw = load_dataset(extension, data_files={"train": train_file}, cache_dir=str(cache_dir))
    column_names = raw["train"].column_names
    if len(column_names) == 3:
        sent0, sent1, sent2 = column_names
    elif len(column_names) == 2:
        (sent0, sent1), sent2 = column_names, None
    elif len(column_names) == 1:
        sent0 = sent1 = column_names[0]
        sent2 = None
    else:
        raise NotImplementedError(column_names)

    def prepare_features(examples):
        total = len(examples[sent0])
        for name in [c for c in (sent0, sent1, sent2) if c is not None]:
            examples[name] = [" " if v is None else v for v in examples[name]]
        sentences = examples[sent0] + examples[sent1] + (examples[sent2] if sent2 else [])
        encoded = tokenizer(sentences, max_length=32, truncation=True, padding=False)
        width = 3 if sent2 else 2
        return {
            k: [[v[i + total * j] for j in range(width)] for i in range(total)]
            for k, v in encoded.items()
        }

    features = raw["train"].map(prepare_features, batched=True, remove_columns=column_names)
    return raw["train"], features


def test_simcse_triplets_load_in_simcse(
    tmp_path: Path, manifest, rows_factory, tiny_bert, hf_cache
) -> None:
    from transformers import AutoTokenizer

    version = _version(tmp_path, manifest, [rows_factory(40, 30)])
    out = tmp_path / "simcse_train.csv"
    result = export_version(version, "simcse", out)
    assert result.layout == "triplet" and result.columns == ["sent0", "sent1", "hard_neg"]
    raw, features = simcse_load(str(out), AutoTokenizer.from_pretrained(tiny_bert), hf_cache)
    expected = [r for r in _expected(version) if r["split"] == "aigen"]
    assert raw.column_names == ["sent0", "sent1", "hard_neg"]
    assert raw["sent0"] == [
        r["sentence"] for r in expected
    ]  # quotes, commas, newlines, unicode intact
    assert raw["sent1"] == [r["positive"] for r in expected]
    assert raw["hard_neg"] == [r["negative"] for r in expected]
    assert len(features) == len(expected) and all(len(ids) == 3 for ids in features["input_ids"])
    others = sum(r["split"] == "other" for r in _expected(version))
    assert result.skipped["other_rows_not_triplets"] == others
    assert result.skipped["intermediate_views_not_exported"] == len(expected)


def test_simcse_pairs_keep_other_rows_as_self_pairs(
    tmp_path: Path, manifest, rows_factory, tiny_bert, hf_cache
) -> None:
    from transformers import AutoTokenizer

    version = _version(tmp_path, manifest, [rows_factory(10, 20)])
    out = tmp_path / "pairs.csv"
    result = export_version(version, "simcse", out, split="all", layout="pair")
    raw, features = simcse_load(str(out), AutoTokenizer.from_pretrained(tiny_bert), hf_cache)
    rows = _expected(version, "all")
    assert raw.column_names == ["sent0", "sent1"] and raw.num_rows == len(rows) == result.rows
    assert raw["sent1"] == [r["positive"] or r["sentence"] for r in rows]
    assert all(len(ids) == 2 for ids in features["input_ids"])
    assert (
        result.skipped["self_pairs"] == 20 and result.skipped["negative_views_not_exported"] == 10
    )


def test_simcse_leaves_out_cells_pandas_reads_as_missing(
    tmp_path: Path, manifest, rows_factory, hf_cache
) -> None:
    from datasets import load_dataset

    odd = rows_table([
        {"id": row_id("t", "NA"), "sentence": "NA", "split": "aigen", "method": "sts", "positive": "p", "intermediate": "i", "negative": "n"},
        {"id": row_id("t", "x"), "sentence": "x", "split": "aigen", "method": "sts", "positive": "null", "intermediate": "i", "negative": "n"},
    ])  # fmt: skip
    version = _version(tmp_path, manifest, [rows_factory(5, 0), odd], heldout_fraction=0.0)
    out = tmp_path / "s.csv"
    result = export_version(version, "simcse", out)
    raw = load_dataset(
        "csv", data_files={"train": str(out)}, cache_dir=str(hf_cache), delimiter=","
    )["train"]
    assert result.skipped["cells_pandas_reads_as_missing"] == 2 and raw.num_rows == 5
    assert None not in [*raw["sent0"], *raw["sent1"], *raw["hard_neg"]]
    ngcse = tmp_path / "n.jsonl"
    export_version(version, "ngcse", ngcse)  # JSON has no such trap: the rows stay
    loaded = load_dataset("json", data_files={"train": str(ngcse)}, cache_dir=str(hf_cache))[
        "train"
    ]
    assert "NA" in list(loaded["sentence"]) and "null" in list(loaded["4"])


@pytest.mark.parametrize("bad", ["train.tsv", "data_tsv/train.csv", "train.txt"])
def test_simcse_refuses_paths_its_loader_would_misread(
    tmp_path: Path, manifest, rows_factory, bad: str
) -> None:
    version = _version(tmp_path, manifest, [rows_factory(3, 3)])
    with pytest.raises(InputError, match="SimCSE"):
        export_version(version, "simcse", tmp_path / bad)


# -- NGCSE -----------------------------------------------------------------------------------
class PrepareFeatures:
    """NGCSE's PrepareFeatures: one key set per split, from the first row of that split."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.aigen_keys: list[str] = []
        self.other_keys: list[str] = []

    def _group(self, examples, split: str, keys: list[str]) -> list[str]:
        sentences = []
        for idx in range(len(examples["split"])):
            if examples["split"][idx] != split:
                continue
            if not keys:
                keys += [k for k in NGCSE_KEYS if examples[k][idx] != ""]
            sentences += [examples[k][idx] if examples[k][idx] is not None else " " for k in keys]
        return sentences

    def __call__(self, examples):
        aigen = self._group(examples, "aigen", self.aigen_keys)
        other = self._group(examples, "other", self.other_keys)
        self.raw_groups = [
            aigen[i : i + len(self.aigen_keys)]
            for i in range(0, len(aigen), len(self.aigen_keys) or 1)
        ]
        # an other row with one key is used twice (utils.py: `features[key][-1] * 2`)
        self.raw_other_groups = [
            other[i : i + len(self.other_keys)] * (2 if len(self.other_keys) == 1 else 1)
            for i in range(0, len(other), len(self.other_keys) or 1)
        ]
        encoded = self.tokenizer(aigen + other, max_length=32, truncation=True, padding=False)
        features = {k: [] for k in encoded}
        features["split"] = []
        n_aigen = len(aigen) // len(self.aigen_keys) if aigen else 0
        n_other = len(other) // len(self.other_keys) if other else 0
        for i in range(n_aigen):
            features["split"].append("aigen")
            for k, v in encoded.items():
                features[k].append(v[i * len(self.aigen_keys) : (i + 1) * len(self.aigen_keys)])
        base = n_aigen * len(self.aigen_keys)
        for i in range(n_other):
            features["split"].append("other")
            for k, v in encoded.items():
                group = v[base + i * len(self.other_keys) : base + (i + 1) * len(self.other_keys)]
                features[k].append(group * 2 if len(self.other_keys) == 1 else group)
        return features


def ngcse_load(train_file: str, tokenizer, cache_dir: Path, only_aigen: bool = False):
    """NGCSE train.py's data path."""
    from datasets import load_dataset

    assert train_file.split(".")[-1] in ["json", "jsonl"]
    raw = load_dataset("json", data_files={"train": train_file}, cache_dir=str(cache_dir))
    column_names = raw["train"].column_names
    prepare = PrepareFeatures(tokenizer)
    train = raw["train"]
    if only_aigen:
        train = train.filter(lambda r: r["split"] == "aigen")
    features = train.map(
        prepare,
        batched=True,
        remove_columns=[c for c in column_names if c != "split"],
        load_from_cache_file=False,
    )
    return raw["train"], prepare, features


def test_ngcse_hybrid_loads_in_ngcse(
    tmp_path: Path, manifest, rows_factory, tiny_bert, hf_cache
) -> None:
    from transformers import AutoTokenizer

    version = _version(tmp_path, manifest, [rows_factory(30, 50)])
    out = tmp_path / "wiki_sts_train.jsonl"
    result = export_version(version, "ngcse", out)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert all(list(json.loads(line)) == [*NGCSE_KEYS, "split"] for line in lines)
    raw, prepare, features = ngcse_load(
        str(out), AutoTokenizer.from_pretrained(tiny_bert), hf_cache
    )
    expected = _expected(version)
    assert raw.num_rows == len(expected) == result.rows
    assert prepare.aigen_keys == ["sentence", "5", "4", "3", "0"]
    assert prepare.other_keys == ["sentence"]
    aigen = [r for r in expected if r["split"] == "aigen"]
    assert [g[0] for g in prepare.raw_groups] == [r["sentence"] for r in aigen]
    assert [g[1:] for g in prepare.raw_groups] == [
        [r["sentence"], r["positive"], r["intermediate"], r["negative"]] for r in aigen
    ]
    assert all("" not in group for group in prepare.raw_groups)  # never trains on an empty view
    by_split = {"aigen": 5, "other": 2}
    assert all(
        len(ids) == by_split[s]
        for ids, s in zip(features["input_ids"], features["split"], strict=True)
    )
    _, _, only = ngcse_load(
        str(out), AutoTokenizer.from_pretrained(tiny_bert), hf_cache, only_aigen=True
    )
    assert only.num_rows == len(aigen)


def ngcse_forward_roles(
    aigen_groups: list[list[str]], other_groups: list[list[str]], use_loss3: bool
) -> dict:
    """Which text plays which part in NGCSE's loss: the indexing of ``NGBert._ng_forward``.

    A minimal re-implementation on texts instead of embeddings, after BDBC-KG-NLP/NGCSE at
    commit 921ff5031680769de70317bc915b8d86aef02ce3:

    * ``ngcse/utils.py`` ``OurDataCollatorWithPadding.__call__`` (lines 371-401): the aigen
      rows of a batch first, then the other rows, each reshaped to (rows, keys);
    * ``ngcse/models.py`` ``_ng_forward`` with ``--use_native_loss`` (lines 295-298, 342-359):
      ``aigen_pos_idx = 2 if aigen_sent_num > 3 else 1``; anchors = other[:, 0] then
      aigen[:, 0]; candidates = other[:, 1], aigen[:, aigen_pos_idx], then other[:, -1] if
      other rows have more than 2 keys, then aigen[:, -1] unless ``use_loss3``; labels =
      arange: anchor i's positive is candidate i;
    * the hierarchical triplet loss, ``use_loss3`` (lines 406-424): ``levels_sim[:, l-1] =
      sim(aigen[:, 0], aigen[:, l])`` and term ``idx`` is ``relu(levels_sim[:, idx+1] -
      levels_sim[:, idx] + margins[0][min(idx, len - 1)])``: key idx+1 ranked above key idx+2.
    """
    aigen_sent_num = len(aigen_groups[0]) if aigen_groups else 0
    other_sent_num = len(other_groups[0]) if other_groups else 0
    aigen_pos_idx = 2 if aigen_sent_num > 3 else 1
    anchors = [g[0] for g in other_groups] + [g[0] for g in aigen_groups]
    candidates = [g[1] for g in other_groups] + [g[aigen_pos_idx] for g in aigen_groups]
    hard_negatives = []
    if other_sent_num > 2:
        hard_negatives += [g[-1] for g in other_groups]
    if aigen_sent_num > 2 and not use_loss3:
        hard_negatives += [g[-1] for g in aigen_groups]
    rankings = [
        [(g[idx + 1], g[idx + 2]) for idx in range(aigen_sent_num - 2)] for g in aigen_groups
    ]
    return {
        "positive": dict(zip(anchors, candidates[: len(anchors)], strict=True)),
        "hard_negatives": hard_negatives,
        "rankings": dict(zip([g[0] for g in aigen_groups], rankings, strict=True)),
    }


@pytest.mark.parametrize("use_loss3", [True, False], ids=["sts_ht", "sts"])
def test_ngcse_export_gives_the_authors_forward_pass_the_papers_roles(
    tmp_path: Path, manifest, rows_factory, tiny_bert, hf_cache, use_loss3: bool
) -> None:
    """scripts/data_domain/bert/wiki/sts_ht.sh (--use_native_loss --use_loss3) must train
    InfoNCE on (s, s^p) and rank s^p > s^m > s^n (NGCSE eq. 1, 6, 7); sts.sh (no loss3)
    InfoNCE on (s, s^p) with s^n as the hard negative."""
    from transformers import AutoTokenizer

    version = _version(tmp_path, manifest, [rows_factory(12, 20)], heldout_fraction=0.0)
    out = tmp_path / "wiki_sts_train.jsonl"
    export_version(version, "ngcse", out)
    _, prepare, _ = ngcse_load(str(out), AutoTokenizer.from_pretrained(tiny_bert), hf_cache)
    roles = ngcse_forward_roles(prepare.raw_groups, prepare.raw_other_groups, use_loss3)

    rows = _expected(version)
    for row in rows:
        if row["split"] == "other":
            assert roles["positive"][row["sentence"]] == row["sentence"]  # dropout positive
            continue
        assert roles["positive"][row["sentence"]] == row["positive"]
        if use_loss3:
            ranked = roles["rankings"][row["sentence"]]
            assert (row["positive"], row["intermediate"]) in ranked
            assert (row["intermediate"], row["negative"]) in ranked
            # every ranking keeps s^p above s^m above s^n (the first ranks the anchor's own
            # dropout view above s^p)
            order = [row["sentence"], row["positive"], row["intermediate"], row["negative"]]
            assert all(order.index(hi) < order.index(lo) for hi, lo in ranked)
    if use_loss3:
        assert roles["hard_negatives"] == []
    else:
        aigen = [r for r in rows if r["split"] == "aigen"]
        assert roles["hard_negatives"] == [r["negative"] for r in aigen]


def test_ngcse_nli_rows_keep_the_entailment_as_positive(
    tmp_path: Path, manifest, rows_factory, tiny_bert, hf_cache
) -> None:
    from transformers import AutoTokenizer

    nli = rows_factory(8, 6, views=("positive", "negative"), method="nli")
    version = _version(tmp_path, manifest, [nli], heldout_fraction=0.0)
    out = tmp_path / "wiki_nli_train.jsonl"
    export_version(version, "ngcse", out)
    _, prepare, _ = ngcse_load(str(out), AutoTokenizer.from_pretrained(tiny_bert), hf_cache)
    assert prepare.aigen_keys == ["sentence", "5", "0"]
    roles = ngcse_forward_roles(prepare.raw_groups, prepare.raw_other_groups, use_loss3=False)
    aigen = [r for r in _expected(version) if r["split"] == "aigen"]
    assert all(roles["positive"][r["sentence"]] == r["positive"] for r in aigen)
    assert roles["hard_negatives"] == [r["negative"] for r in aigen]


def test_ngcse_demotes_aigen_rows_missing_a_view(
    tmp_path: Path, manifest, rows_factory, tiny_bert, hf_cache
) -> None:
    from transformers import AutoTokenizer

    partial = rows_factory(5, 0, views=("positive", "negative"), start=100)  # no intermediate
    version = _version(
        tmp_path,
        manifest,
        [rows_factory(5, 0), partial, rows_factory(0, 5, start=200)],
        heldout_fraction=0.0,
    )
    out = tmp_path / "n.jsonl"
    result = export_version(version, "ngcse", out)
    assert result.skipped == {"aigen_rows_demoted_to_other": 5}
    raw, prepare, _ = ngcse_load(str(out), AutoTokenizer.from_pretrained(tiny_bert), hf_cache)
    assert list(raw["split"]).count("aigen") == 5 and list(raw["split"]).count("other") == 10
    assert all("" not in group for group in prepare.raw_groups)


def test_ski_knowledge_is_the_positive(tmp_path: Path, manifest, rows_factory, hf_cache) -> None:
    from datasets import load_dataset

    version = _version(
        tmp_path,
        manifest,
        [rows_factory(6, 4, views=("knowledge",), method="ski")],
        heldout_fraction=0.0,
    )
    out = tmp_path / "ski.jsonl"
    export_version(version, "ngcse", out)
    loaded = load_dataset("json", data_files={"train": str(out)}, cache_dir=str(hf_cache))["train"]
    rows = _expected(version)
    assert loaded["5"] == [r["knowledge"] or "" for r in rows] and set(loaded["0"]) == {""}
    pairs = tmp_path / "ski.csv"
    assert export_version(version, "simcse", pairs).layout == "pair"


# -- sentence-transformers -------------------------------------------------------------------
@pytest.mark.slow
def test_sentence_transformers_trainer_trains_on_the_export(
    tmp_path: Path, manifest, rows_factory, tiny_bert, hf_cache
) -> None:
    pytest.importorskip("sentence_transformers")
    from datasets import load_dataset
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    version = _version(tmp_path, manifest, [rows_factory(24, 10)])
    out = tmp_path / "st.parquet"
    result = export_version(version, "sentence-transformers", out)
    train = load_dataset("parquet", data_files={"train": str(out)}, cache_dir=str(hf_cache))[
        "train"
    ]
    assert train.column_names == ["anchor", "positive", "negative"] == result.columns
    expected = [r for r in _expected(version) if r["split"] == "aigen"]
    assert train["anchor"] == [r["sentence"] for r in expected]
    model = SentenceTransformer(modules=[Transformer(str(tiny_bert)), Pooling(16)], device="cpu")
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=2, per_device_train_batch_size=4, report_to="none",
        use_cpu=True, save_strategy="no", disable_tqdm=True,
    )  # fmt: skip
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=train, loss=MultipleNegativesRankingLoss(model)
    )
    assert trainer.train().global_step == 2


def test_sentence_transformers_pairs_have_no_nulls(tmp_path: Path, manifest, rows_factory) -> None:
    import pyarrow.parquet as pq

    version = _version(tmp_path, manifest, [rows_factory(4, 6)])
    out = tmp_path / "st_pairs.parquet"
    export_version(version, "sentence_transformers", out, split="all", layout="pair")
    table = pq.read_table(out)
    assert table.column_names == ["anchor", "positive"] and table.num_rows == 10
    assert all(table.column(c).null_count == 0 for c in table.column_names)


# -- common ----------------------------------------------------------------------------------
def test_split_selection(tmp_path: Path, manifest, rows_factory) -> None:
    version = _version(tmp_path, manifest, [rows_factory(100, 100)])
    sizes = {
        s: export_version(version, "ngcse", tmp_path / f"{s}.jsonl", split=s).rows
        for s in ("train", "heldout", "all")
    }
    rows = _expected(version, "all")
    assert sizes == {
        "train": sum(not r["heldout"] for r in rows),
        "heldout": sum(r["heldout"] for r in rows),
        "all": 200,
    }
    assert 0 < sizes["heldout"] < 50


def test_errors_name_the_fix(tmp_path: Path, manifest, rows_factory) -> None:
    version = _version(tmp_path, manifest, [rows_factory(0, 10)], heldout_fraction=0.0)
    with pytest.raises(InputError, match="--layout pair"):
        export_version(version, "simcse", tmp_path / "x.csv", layout="triplet")
    with pytest.raises(InputError, match="no rows in split 'heldout'"):
        export_version(version, "ngcse", tmp_path / "x.jsonl", split="heldout")
    with pytest.raises(InputError, match="formats: simcse, ngcse, sentence-transformers"):
        export_version(version, "infersent", tmp_path / "x.csv")
    with pytest.raises(InputError, match=r"\.json/\.jsonl"):
        export_version(version, "ngcse", tmp_path / "x.csv")


def test_export_replaces_atomically_and_configured_exports(
    tmp_path: Path, manifest, rows_factory
) -> None:
    version = _version(tmp_path, manifest, [rows_factory(20, 20)])
    out = tmp_path / "x.jsonl"
    out.write_text("stale")
    export_version(version, "ngcse", out)
    assert out.read_text().startswith("{") and not list(tmp_path.glob(".x.jsonl.tmp-*"))
    exports = [ExportConfig(format="ngcse"), ExportConfig(format="sentence_transformers")]
    results = write_configured_exports(version, exports, tmp_path / "storage")
    assert [r.path for r in results] == [
        default_export_path(tmp_path / "storage", "demo", "v0001", fmt, split)
        for fmt in ("ngcse", "sentence-transformers")
        for split in ("train", "heldout")
    ]
    assert all(r.path.is_file() for r in results)
    assert (
        results[0].path == tmp_path / "storage" / "exports" / "demo" / "v0001" / "ngcse-train.jsonl"
    )


def test_exports_stream_batches(tmp_path: Path, manifest) -> None:
    ids = [row_id("big", str(i)) for i in range(150_000)]
    table = pa.table(
        {"id": ids, "sentence": [f"s {i}" for i in range(150_000)], "split": ["other"] * 150_000}
    )
    version = _version(
        tmp_path, manifest, table.to_batches(max_chunksize=50_000), heldout_fraction=0.0
    )
    result = export_version(
        version, "sentence-transformers", tmp_path / "big.parquet", layout="pair"
    )
    assert result.rows == 150_000
