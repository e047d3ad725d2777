"""The dataset card (``README.md``) of a version, with the YAML header ``datasets`` reads.

``datasets.load_dataset(<version dir>)`` and the Hub read the header's one config
(:func:`config_name`): its ``train`` split is ``data/train-*``, its ``heldout`` split
``data/heldout-*`` (docs/dataset-contract.md, "Dataset card").

Example:
    >>> card = render_card({"dataset": "demo", "version": "v0001", "method": "ski", "counts": {}})
    >>> card.splitlines()[0], "path: data/train-*" in card
    ('---', True)
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from cseaug.dataset.manifest import describe_model, describe_quality_gate, describe_usage
from cseaug.markdown import markdown_table

SPLITS = ("train", "heldout")

CITATIONS: dict[str, str] = {
    "ngcse": """@inproceedings{li2024ngcse,
  title     = {Narrowing the Gap between Supervised and Unsupervised Sentence Representation Learning with Large Language Model},
  author    = {Li, Mingxin and Zhang, Richong and Nie, Zhijie and Mao, Yongyi},
  booktitle = {Proceedings of the AAAI Conference on Artificial Intelligence (AAAI)},
  year      = {2024}
}""",
    "osscse": """@inproceedings{shi2023osscse,
  title     = {OssCSE: Overcoming Surface Structure Bias in Contrastive Learning for Unsupervised Sentence Embedding},
  author    = {Shi, Zhan and Wang, Guoyin and Bai, Ke and Li, Jiwei and Li, Xiang and Cui, Qingjun and Zeng, Belinda and Chilimbi, Trishul and Zhu, Xiaodan},
  booktitle = {Proceedings of the 2023 Conference on Empirical Methods in Natural Language Processing (EMNLP)},
  year      = {2023}
}""",
    "skicse": """@misc{skicse,
  title  = {SKICSE: Sentence Knowable Information Prompted by LLMs Improves Contrastive Sentence Embeddings},
  author = {Anonymous},
  note   = {ACL submission (anonymous, under review)}
}""",
    "vaegpt_sim": """@misc{wang_vaegpt_sim,
  title  = {VAEGPT-Sim: Improving Sentence Representation with Limited Corpus Using Gradually-Denoising VAE},
  author = {Wang, Zhenyi and Ning, Haiyan and Ling, Qing and Wang, Dan},
  note   = {Ant Group}
}""",
}
"""BibTeX entries of the papers, from the titles and authors of ``shared/papers``."""

METHOD_PAPERS: dict[str, tuple[str, str]] = {
    "sts": ("ngcse", "STS pattern simulation with an LLM (NGCSE, 'Pattern Simulation with LLM')"),
    "nli": ("ngcse", "NLI pattern simulation with an LLM (NGCSE, 'Pattern Simulation with LLM')"),
    "ski": ("skicse", "sentence knowable information written by an LLM (SKICSE, section 3.1)"),
    "osscse": (
        "osscse",
        "negation insertion and MER-filtered back-translation (OssCSE, section 4)",
    ),
    "generate_cse": (
        "vaegpt_sim",
        "Generate-CSE random selection with the VAEGPT-Sim generator (appendix A.1)",
    ),
}
"""Method -> (paper key, one-line description)."""

ALWAYS_CITED = (
    ("ngcse", "hybrid layout (aigen + other rows) and the 10% held-out share of its settings"),
    ("osscse", "the MER metric of the mer_* columns (eq. 1)"),
)


SIZE_LIMITS = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)
SIZE_CATEGORIES = ("n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "n>10M")


def card_header(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The YAML metadata of the card (what ``datasets`` and the Hub read); the licence is
    the source datasets' (``unknown`` to cseaug), the generating model ``cseaug_model``."""
    counts = manifest.get("counts", {})
    rows = int(counts.get("rows", 0))
    held = int(counts.get("heldout", 0))
    splits = [s for s, n in zip(SPLITS, (rows - held, held), strict=True) if n] or ["train"]
    corpus = manifest.get("config", {}).get("corpus", {})
    inputs = manifest.get("inputs", {})
    sources = [corpus["hf_dataset"]] if corpus.get("hf_dataset") else []
    sources += sorted({str(v["name"]) for v in inputs.values() if v.get("name")} - set(sources))
    return {
        "license": "unknown",
        "pretty_name": f"{_dataset(manifest)} {manifest.get('version', '')}".strip(),
        "language": ["en"],
        "task_categories": ["sentence-similarity"],
        "tags": ["contrastive-learning", "sentence-embeddings", "synthetic", "cseaug"],
        "size_categories": [SIZE_CATEGORIES[bisect.bisect_right(SIZE_LIMITS, rows)]],
        "source_datasets": sources,
        "cseaug_model": describe_model(manifest.get("model")),
        "configs": [
            {
                "config_name": config_name(manifest),
                "data_files": [{"split": s, "path": f"data/{s}-*"} for s in splits],
                "default": True,
            }
        ],
    }


def config_name(manifest: Mapping[str, Any]) -> str:
    """The card's config name, unique to the dataset, version and data, so ``datasets``'
    cache never mixes two datasets' ``v0001`` (docs/dataset-contract.md, "Dataset card").

    Example:
        >>> config_name({"dataset": "wiki-sts", "version": "v0001",
        ...              "fingerprints": {"data": "0123456789abcdef"}})
        'wiki-sts-v0001-01234567'
    """
    data = str(manifest.get("fingerprints", {}).get("data", ""))[:8]
    return "-".join(
        str(part) for part in (_dataset(manifest), manifest.get("version"), data) if part
    )


def _dataset(manifest: Mapping[str, Any]) -> str:
    """The dataset's name (the config's for a manifest not yet published)."""
    return str(manifest.get("dataset", manifest.get("name", "dataset")))


def render_card(manifest: Mapping[str, Any], images: Sequence[str] = ()) -> str:
    """The whole ``README.md`` of a version from its manifest; ``images`` (paths relative to
    the version, e.g. ``diagnostics/mer_hist.png``) are shown under "Diagnostics"."""
    counts: Mapping[str, Any] = manifest.get("counts", {})
    method = str(manifest.get("method", ""))
    title = f"{_dataset(manifest)} ({manifest.get('version', 'unpublished')})"
    fraction = manifest.get("heldout_fraction")
    share = "" if fraction is None else f": {fraction:.0%} in this version"
    lines = [
        "---",
        yaml.safe_dump(card_header(manifest), sort_keys=False).rstrip(),
        "---",
        "",
        f"# {title}",
        "",
    ]
    if manifest.get("description"):
        lines += [str(manifest["description"]), ""]
    paper, how = METHOD_PAPERS.get(method, ("", method or "unknown"))
    lines += [
        "Contrastive sentence-embedding training data built by `cseaug`: one row per anchor "
        "sentence; `split` is `aigen` for anchors with generated views and `other` for the plain "
        "corpus sentences of the hybrid set. `heldout` flags a deterministic share of the rows "
        f"(by a hash of `id`){share}, the `heldout` split. The rows keep the licences of "
        "their source datasets.",
        "",
        "## Counts",
        "",
    ]
    by_split = counts.get("by_split", {})
    totals = [counts.get("rows", 0), by_split.get("aigen", 0), by_split.get("other", 0)]
    totals += [counts.get("heldout", 0), counts.get("rejects", 0)]
    lines.append(markdown_table(("rows", "aigen", "other", "heldout", "rejects"), [totals]))
    if views := counts.get("views", {}):
        lines += ["", "Rows with each view:", ""]
        lines.append(markdown_table(("view", "rows"), sorted(views.items())))
    rejects = [
        (stage, reason, n)
        for stage, reasons in sorted(counts.get("rejects_by_stage", {}).items())
        for reason, n in sorted(reasons.items())
    ]
    if rejects:
        lines += ["", "## Rejects by reason", ""]
        lines += ["Every dropped input or output is in `rejects.parquet`.", ""]
        lines.append(markdown_table(("stage", "reason", "rows"), rejects))
    lines += ["", "## How it was made", "", f"- Method: `{method}`: {how}."]
    lines.append(f"- Quality gate: {describe_quality_gate(manifest.get('quality_gate'))}.")
    if model := manifest.get("model"):
        lines.append(f"- Model: {describe_model(model, quote='`')}")
    for prompt in manifest.get("prompts", []):
        lines.append(f"- Prompt `{prompt['name']}` sha256 `{prompt['sha256'][:16]}`")
    if usage := manifest.get("token_usage"):
        lines.append(f"- Token usage: {describe_usage(usage)}")
    if fingerprints := sorted(manifest.get("fingerprints", {}).items()):
        lines.append(
            "- Fingerprints: " + ", ".join(f"{k} `{str(v)[:16]}`" for k, v in fingerprints)
        )
    if code := manifest.get("code"):
        lines.append(
            f"- Code: cseaug {code.get('version')} (git {str(code.get('git_commit'))[:12]}, dirty: {code.get('git_dirty')})"
        )
    lines += [
        "- Full record: `manifest.json` (config with secrets redacted, inputs' sha256, counts).",
        "",
        "## Loading",
        "",
        "```python",
        "import datasets",
        f'ds = datasets.load_dataset("<this directory or Hub repo>", "{config_name(manifest)}")',
        'train, heldout = ds["train"], ds.get("heldout")  # heldout: rows with `heldout` true',
        "```",
        "",
        "Exports for SimCSE, NGCSE, sentence-transformers and as JSONL with every view: "
        "`cseaug export <name>/<version> --format ...`; a sentence encoder trained on it: "
        "`cseaug train-encoder --version <name>/<version> --config configs/train/<objective>.yaml`.",
    ]
    if images:
        lines += ["", "## Diagnostics", ""]
        lines += [f"![{image}]({image})" for image in images]
    cited = [(paper, "the method")] if paper else []
    cited += [(key, why) for key, why in ALWAYS_CITED if key != paper]
    lines += ["", "## Citations", ""]
    for key, why in cited:
        lines += [f"For {why}:", "", "```bibtex", CITATIONS[key], "```", ""]
    return "\n".join(lines).rstrip() + "\n"
