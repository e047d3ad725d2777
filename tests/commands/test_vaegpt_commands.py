"""``cseaug train-vaegpt``, ``cseaug synonyms`` and ``cseaug score`` end to end on tiny inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cseaug.cli import app

runner = CliRunner()

MRPC = (
    "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    "1\t1\t2\tA man plays a guitar.\tA man is playing the guitar.\n"
    "1\t3\t4\tTwo dogs run in a field.\tTwo dogs are running through a field.\n"
    "1\t5\t6\tThe woman slices an onion.\tAn onion is being sliced by a woman.\n"
    "0\t7\t8\tKids play football.\tThe stock market fell.\n"
    "1\t9\t10\tA cat sleeps on the sofa.\tA cat is asleep on a couch.\n"
)


def test_score_prints_and_writes_the_scorecard(tmp_path: Path) -> None:
    table = tmp_path / "gen.csv"
    table.write_text(
        "source,target,generation,second\n"
        "A man is cooking,A man cooks food,a man is cooking food,The man cooks the meal\n"
        "Dogs run.,dogs run,Dogs run,dogs are running\n",
        encoding="utf-8",
    )
    out = tmp_path / "card.json"
    result = runner.invoke(
        app,
        [
            "score",
            str(table),
            "--generation-column",
            "generation",
            "--generation-column",
            "second",
            "--no-cosine",
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "deficiency" in result.output
    card = json.loads(out.read_text())
    assert card["pairs"] == 2 and card["generations"] == 4 and card["cosine"] is None
    assert 0 < card["diversity_multiple"] <= 1


def test_score_names_a_missing_column(tmp_path: Path) -> None:
    table = tmp_path / "gen.jsonl"
    table.write_text(
        json.dumps({"source": "a", "target": "b", "output": ["c"]}) + "\n", encoding="utf-8"
    )
    result = runner.invoke(app, ["score", str(table), "--no-cosine"])
    assert result.exit_code != 0
    assert "no column 'generation'" in str(result.exception)
    ok = runner.invoke(app, ["score", str(table), "--no-cosine", "--generation-column", "output"])
    assert ok.exit_code == 0, ok.output


@pytest.mark.slow
def test_train_then_generate_synonyms(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from tests.tiny_models import build_tiny_gpt2

    base = build_tiny_gpt2(tmp_path / "gpt2")
    mrpc = tmp_path / "mrpc.txt"
    mrpc.write_text(MRPC, encoding="utf-8")
    run = tmp_path / "run"
    trained = runner.invoke(
        app,
        [
            "train-vaegpt",
            "--set",
            f"data.mrpc=[{mrpc}]",
            "--set",
            "optim.batch_size=2",
            "--set",
            "schedule.val_rouge_samples=1",
            "--set",
            "generation.max_new_tokens=5",
            "--set",
            f"base_model={base}",
            "--set",
            f"output_dir={run}",
            "--set",
            "optim.max_steps=2",
            "--set",
            "device=cpu",
        ],
    )
    assert trained.exit_code == 0, trained.output
    assert "trained 2 step(s)" in trained.output
    assert (run / "final" / "vaegpt_sim.json").is_file()

    sentences = tmp_path / "in.txt"
    sentences.write_text("A man plays a guitar.\n\nTwo dogs run.\n", encoding="utf-8")
    out = tmp_path / "syn.jsonl"
    generated = runner.invoke(
        app,
        [
            "synonyms",
            "--generator",
            str(run / "final"),
            "--input",
            str(sentences),
            "--output",
            str(out),
            "-n",
            "2",
            "--max-new-tokens",
            "5",
            "--device",
            "cpu",
        ],
    )
    assert generated.exit_code == 0, generated.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["source"] for line in lines] == ["A man plays a guitar.", "Two dogs run."]
    assert all(len(line["generations"]) == 2 for line in lines)
