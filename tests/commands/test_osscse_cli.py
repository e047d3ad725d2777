"""``cseaug negate``, ``cseaug backtranslate`` and ``cseaug mer`` through the typer app."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from cseaug.cli import app
from cseaug.errors import ConfigError, InputError

runner = CliRunner()

LINES = ["She is happy.", "", "Is she happy?", "He went home early."]


@pytest.fixture(scope="module")
def ud_model(shared_models):
    return str(shared_models / "en_ud_ewt_sm")


@pytest.fixture
def sentences(tmp_path):
    path = tmp_path / "sentences.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def test_negate_text_file(tmp_path, sentences, ud_model):
    out = tmp_path / "out" / "negated.parquet"
    result = invoke("negate", sentences, "--output", out, "--set", f"spacy_model={ud_model}")
    assert result.exit_code == 0, result.output
    rows = pq.read_table(out).to_pylist()
    assert [(r["sentence"], r["negative"], r["rule"]) for r in rows] == [
        ("She is happy.", "She is not happy.", "copula"),
        ("He went home early.", "He did not go home early.", "do_support"),
    ]
    rejects = pq.read_table(tmp_path / "out" / "negated.rejects.parquet").to_pylist()
    assert [(r["stage"], r["reason"]) for r in rejects] == [
        ("corpus", "empty"),
        ("negation", "question"),
    ]
    assert "share negated 66.7%" in result.output


def test_negate_table_column_with_config_and_jsonl(tmp_path, ud_model):
    table = tmp_path / "pairs.csv"
    table.write_text('id,text\n1,"She is happy."\n2,"He can swim."\n', encoding="utf-8")
    config = tmp_path / "run.yaml"
    config.write_text(
        f"name: t\nmethod: osscse\ncorpus: {{path: x.txt}}\nnegation: {{spacy_model: {ud_model}}}\n",
        encoding="utf-8",
    )
    out = tmp_path / "neg.jsonl"
    result = invoke(
        "negate", table, "--column", "text", "-o", out, "--config", config, "--set", "batch_size=1"
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["negative"] for r in rows] == ["She is not happy.", "He can not swim."]
    assert (tmp_path / "neg.rejects.jsonl").read_text(encoding="utf-8") == ""


def test_negate_input_errors(tmp_path, ud_model):
    table = tmp_path / "t.csv"
    table.write_text("a,b\nx,y\n", encoding="utf-8")
    result = invoke(
        "negate",
        table,
        "--column",
        "sentence",
        "-o",
        tmp_path / "o.parquet",
        "--set",
        f"spacy_model={ud_model}",
    )
    assert isinstance(result.exception, InputError) and "sentence" in str(result.exception)
    result = invoke("negate", table, "-o", tmp_path / "o.csv")
    assert isinstance(result.exception, InputError) and ".parquet or .jsonl" in str(
        result.exception
    )
    result = invoke(
        "negate", table, "--column", "a", "-o", tmp_path / "o.parquet", "--set", "batch_size=0"
    )
    assert isinstance(result.exception, ConfigError) and "batch_size" in str(result.exception)


@pytest.fixture(scope="module")
def pivots(tmp_path_factory):
    torch = pytest.importorskip("torch")
    pytest.importorskip("sacremoses")
    from tests.tiny_fsmt import build_tiny_pivots

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models on a busy 2-core machine: one thread is ~10x faster
    yield build_tiny_pivots(tmp_path_factory.mktemp("fsmt"), ("de",))
    torch.set_num_threads(before)


def test_backtranslate(tmp_path, sentences, pivots):
    forward, backward = pivots["de"]
    common = [
        "--pivot",
        f"de={forward},{backward}",
        "--set",
        "num_beams=1",
        "--set",
        "max_new_tokens=4",
    ]
    out = tmp_path / "bt.jsonl"
    result = invoke("backtranslate", sentences, "-o", out, "--set", "mer_range=[0,1]", *common)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["sentence"] for r in rows] == [line for line in LINES if line]
    assert {r["positive_method"] for r in rows} == {"backtranslation:de"}
    assert all(r["positive"] == r["candidate_de"] for r in rows)
    assert "share kept 100.0%" in result.output

    strict = tmp_path / "strict.parquet"
    result = invoke("backtranslate", sentences, "-o", strict, *common)
    assert result.exit_code == 0, result.output
    assert pq.read_table(strict).num_rows == 0
    rejects = pq.read_table(tmp_path / "strict.rejects.parquet").to_pylist()
    assert [r["reason"] for r in rejects] == [
        "empty",
        "mer_out_of_range",
        "mer_out_of_range",
        "mer_out_of_range",
    ]
    assert json.loads(rejects[1]["detail"])["mer_range"] == [0.15, 0.6]


def test_backtranslate_unknown_pivot(tmp_path, sentences):
    result = invoke("backtranslate", sentences, "-o", tmp_path / "o.parquet", "--pivot", "fr")
    assert isinstance(result.exception, ConfigError) and "'fr' is not configured" in str(
        result.exception
    )


def test_mer_pair_and_table(tmp_path):
    result = invoke(
        "mer", "--pair", "Bryan Cranston will return.", "Bryan Cranston will not return"
    )
    assert result.exit_code == 0 and result.output.strip() == "0.2000"

    table = tmp_path / "pairs.jsonl"
    table.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"sentence": "the cat sat", "positive": "the dog sat"},
                {"sentence": "a b", "positive": "a b"},
                {"sentence": "x", "positive": None},
            ]
        ),
        encoding="utf-8",
    )
    out = tmp_path / "mer.parquet"
    result = invoke("mer", table, "--output", out)
    assert result.exit_code == 0, result.output
    values = pq.read_table(out).column("mer").to_pylist()
    assert values[:2] == [pytest.approx(1 / 3), 0.0] and values[2] != values[2]  # NaN
    assert "66.7%" not in result.output and "50.0%" in result.output  # 1 of 2 valid pairs in range
