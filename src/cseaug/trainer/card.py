"""What a trained model carries about its training: ``evaluation.json``, ``evaluation.md`` and
a "Training data" section at the top of the model card, naming the dataset version, its
fingerprints, the selected checkpoint and the scores.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cseaug.trainer.evaluation import aggregates_table, scores_table

SCORES_JSON = "evaluation.json"
SCORES_MARKDOWN = "evaluation.md"
CARD = "README.md"


def selection_line(record: Mapping[str, Any]) -> str:
    """Which checkpoint the scores are of: the step, and how it was selected.

    Example:
        >>> selection_line({"steps": 250, "selection": {"dev": "STS-B", "eval_steps": 125,
        ...     "step": 125, "dev_spearman": 0.8123, "history": [[125, 0.8123], [250, 0.8]]}})
        'checkpoint of step 125 of 250: best STS-B dev Spearman (81.23) of 2 evaluations, every 125 steps and at the last'
    """
    selection = record["selection"]
    if not selection["history"]:
        return f"final model, step {record['steps']} (no dev evaluation: evaluation.dev is None)"
    if selection["dev_spearman"] is None:
        return (
            f"final model, step {record['steps']}: no {selection['dev']} dev evaluation gave a "
            "Spearman (constant similarities)"
        )
    return (
        f"checkpoint of step {selection['step']} of {record['steps']}: best "
        f"{selection['dev']} dev Spearman ({100 * selection['dev_spearman']:.2f}) of "
        f"{len(selection['history'])} evaluations, every {selection['eval_steps']} steps and "
        "at the last"
    )


def scores_markdown(record: Mapping[str, Any]) -> str:
    """The Spearman tables (x100) of a training record, titled with the version trained on."""
    scores = record["scores"]
    title = f"STS Spearman x100 of {record['objective']} on {record['dataset']}"
    blocks = [
        f"### {title}",
        f"Scores of the {selection_line(record)}.",
        scores_table(scores.get("before"), scores["after"]),
    ]
    if scores["senteval"]["after"]:
        blocks += [
            "SentEval's aggregates of the STS years at that checkpoint (`all`: every pair "
            "pooled, the papers' number; `mean`, `wmean`: the mean and the size-weighted mean "
            "over the year's subsets):",
            aggregates_table(scores["senteval"]["after"]),
        ]
    return "\n\n".join(blocks) + "\n"


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
        ("selected checkpoint", selection_line(record)),
        ("seed", str(record["seed"])),
        ("base model", f"`{record['base_model']}`"),
    ]
    table = "\n".join(["| | |", "|---|---|", *(f"| {key} | {value} |" for key, value in facts)])
    trained = (
        f"Trained by `cseaug train-encoder` on the published dataset version `{record['dataset']}`."
    )
    return "\n\n".join(["## Training data", trained, table, scores_markdown(record)])


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
    folder = Path(model_dir)
    (folder / SCORES_JSON).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    (folder / SCORES_MARKDOWN).write_text(scores_markdown(record), encoding="utf-8")
    card_path = folder / CARD
    card = card_path.read_text(encoding="utf-8") if card_path.is_file() else ""
    card_path.write_text(insert_section(card, card_section(record)), encoding="utf-8")
