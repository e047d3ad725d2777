"""What a trained model carries about its training: the card section and the score files.

Beside the saved model (``model.save``) the trainer writes ``evaluation.json`` (the dataset
version, its manifest fingerprints, the objective, the training rows and steps, the scores
before and after) and ``evaluation.md`` (the scores as a table), and puts a "Training data"
section at the top of the model card (``README.md``) naming the same version, fingerprints
and scores, so the model can always be traced back to the data it was trained on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cseaug.trainer.evaluation import scores_table

SCORES_JSON = "evaluation.json"
SCORES_MARKDOWN = "evaluation.md"
CARD = "README.md"


def scores_markdown(record: Mapping[str, Any]) -> str:
    """The Spearman table (x100) of a training record, titled with the version trained on."""
    title = f"STS Spearman x100 of {record['objective']} on {record['dataset']}"
    table = scores_table(record["scores"].get("before"), record["scores"]["after"])
    return f"### {title}\n\n{table}\n"


def card_section(record: Mapping[str, Any]) -> str:
    """The model card's "Training data" section of a training record."""
    fingerprints = record["fingerprints"]
    rows = ", ".join(f"{name} {count:,}" for name, count in record["training_rows"].items())
    facts = [
        ("dataset version", f"`{record['dataset']}`"),
        ("manifest.json sha256", f"`{fingerprints['manifest']}`"),
        ("build fingerprint", f"`{fingerprints['build']}`"),
        ("data fingerprint", f"`{fingerprints['data']}`"),
        ("objective", f"{record['objective']}: {record['loss']}"),
        ("training rows", rows),
        ("steps", f"{record['steps']:,}"),
        ("base model", f"`{record['base_model']}`"),
    ]
    lines = [
        "## Training data",
        "",
        f"Trained by `cseaug train-encoder` on the published dataset version `{record['dataset']}`.",
        "",
        "| | |",
        "|---|---|",
        *(f"| {key} | {value} |" for key, value in facts),
        "",
        scores_markdown(record),
    ]
    return "\n".join(lines)


def insert_section(card: str, section: str) -> str:
    """``section`` placed right after the card's YAML header (or first, when it has none).

    Example:
        >>> insert_section("---\\na: 1\\n---\\n# Model\\n", "## Training data\\n")
        '---\\na: 1\\n---\\n\\n## Training data\\n\\n# Model\\n'
    """
    if card.startswith("---\n"):
        end = card.find("\n---\n", 4)
        if end != -1:
            head, body = card[: end + 5], card[end + 5 :]
            return f"{head}\n{section}\n{body.lstrip(chr(10))}"
    return f"{section}\n{card}"


def write_training_record(model_dir: str | Path, record: Mapping[str, Any]) -> None:
    """Write ``evaluation.json``, ``evaluation.md`` and the card section into ``model_dir``."""
    folder = Path(model_dir)
    (folder / SCORES_JSON).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    (folder / SCORES_MARKDOWN).write_text(scores_markdown(record), encoding="utf-8")
    card_path = folder / CARD
    card = card_path.read_text(encoding="utf-8") if card_path.is_file() else ""
    card_path.write_text(insert_section(card, card_section(record)), encoding="utf-8")
