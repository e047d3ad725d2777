"""The same configs publish byte-identical versions: every method, checked against goldens.

``golden_builds.json`` holds, for one build per method (NGCSE ``sts`` with both pattern
filters and diagnostics, ``nli`` with views derived from the positive and rotated data
files, SKICSE quadruplets with given views on ``other`` and demoted rows, OssCSE with tiny
FSMT models and the UD spaCy pipeline, Generate-CSE with a tiny VAEGPT-Sim generator), the
complete config (every value written out, so that a changed default elsewhere cannot change
what is built here) and the sha256 of every published data file and of ``rejects.parquet``,
with the manifest's data fingerprint. The goldens were recorded on commit 7a38926, before
the build layer was restructured; this test rebuilds them on the code of today. Since then
they changed twice, on purpose: corpus cleaning removes invisible characters by default
(issue 9 item 7), so two ``other`` rows of ``wiki-nli`` lost a word joiner (U+2060) and its
second data file changed; the configs gained the new settings at their defaults. Then the
per-row checks (issue 20 item 1, ``quality`` at its defaults added to each config) rejected
views the fake LLM wrote as the anchor with a word replaced (``unchanged_view``: 2 rows of
``demo-sts``, 9 knowledge views of ``nli-ski``) and one ``wiki-nli`` view of numbered words
that py3langid reads as another language (``wrong_language``); their anchors became
``other`` rows. The OssCSE and Generate-CSE goldens did not change. Then held-out rows moved
to their own files (``data/heldout-*``, the card's ``heldout`` split): the goldens whose
configs hold rows out (all but OssCSE's) gained that file and their train files lost those
rows; their rows sorted by id, the counts and ``rejects.parquet`` are identical to the builds
of the code before (checked by building both), and the OssCSE golden did not change.
Then the per-row checks rejected views that hold control characters (``control_characters``,
docs/quality.md, "Text hazards"): 31 of ``generate-cse``'s, whose tiny random generator
writes bytes such as U+0001 and ESC; only that golden changed. Then cosine similarity was
measured once, by the build's CS step, into the new float32 ``cs_<view>`` columns
(docs/dataset-contract.md): every golden's data files and data fingerprint changed (new
columns; the CS settings joined the fingerprint), while its counts and ``rejects.parquet``
stayed identical (the same rows kept, ``demo-sts``'s pattern filter included).

The LLM is the loopback server of ``tests/fake_openai_server.py``; its answers are a
deterministic function of the request (:func:`golden_answer`, the server's policy): words
of the input replaced by numbered words, a refusal for some requests, so that cleaning, the
pattern-order filter and demotion to ``other`` rows all have work. Parquet bytes depend on
the pyarrow version, which ``constraints.txt`` pins; under another version the test skips
and says so.

Regenerate the goldens (only on a commit whose output is trusted):
``.venv/bin/python tests/pipeline/test_byte_identical.py``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # as pytest's pythonpath does, also when run as a script

from tests.fake_openai_server import Action, FakeOpenAIServer  # noqa: E402

GOLDEN_FILE = Path(__file__).with_name("golden_builds.json")
PYARROW_VERSION = "26.0.1"
"""The pyarrow of constraints.txt, which wrote the golden files."""

WIKI = "{shared_data}/wiki/wiki1m_for_simcse_first11914.txt"
NLI_TRIPLES = "{shared_data}/nli/nli_triples_snli_devtest.csv"
FILTERS = {"eval_data_dir": "{shared_data}", "remove_contaminated": True}
LLM = {
    "backend": "openai-compatible",
    "base_url": "{llm_url}",
    "model": "golden",
    "concurrency": 4,
}

CONFIGS: dict[str, dict[str, Any]] = {
    "demo-sts": {
        "name": "demo-sts",
        "method": "sts",
        "corpus": {"name": "demo", "path": "{repo}/examples/demo_corpus.txt"},
        "sample": {"size": 14, "seed": 42},
        "patterns": {"source": "paper"},
        "llm": LLM,
        "output": {"root": "{root}", "exports": ["simcse"]},
        "execution": {"shard_size": 100},
        "diagnostics": {"enabled": True, "pattern_filter": "both", "cs_sample": 100, **FILTERS},
        # the golden answers hash the request: not graded, which the quality gate stops
        "publish": {"min_pattern_share": 0},
    },
    "wiki-nli": {
        "name": "wiki-nli",
        "method": "nli",
        "corpus": {"name": "wiki", "path": WIKI},
        "sample": {"size": 210, "seed": 7},
        "patterns": {"source": "nli_csv", "path": NLI_TRIPLES},
        "generation": {"derive_from": "positive"},
        "llm": LLM,
        "output": {"root": "{root}", "exports": [], "rows_per_file": 5000},
        "execution": {"shard_size": 100},
        "diagnostics": {"enabled": False, "pattern_filter": "mer", **FILTERS},
        # as demo-sts: the golden answers are not graded, which the quality gate stops
        "publish": {"min_pattern_share": 0},
    },
    "nli-ski": {
        "name": "nli-ski",
        "method": "ski",
        "corpus": {
            "name": "nli",
            "path": NLI_TRIPLES,
            "format": "csv",
            "text_column": "sent0",
            "view_columns": {"positive": "sent1", "negative": "hard_neg"},
        },
        "sample": {"size": 150, "seed": 5},
        "llm": LLM,
        "output": {"root": "{root}", "exports": []},
        "execution": {"shard_size": 100},
        "diagnostics": {"enabled": False, **FILTERS},
    },
    "wiki-osscse": {
        "name": "wiki-osscse",
        "method": "osscse",
        "corpus": {"name": "wiki", "path": WIKI},
        "sample": {"size": 24, "seed": 3, "include_other": False},
        "negation": {"spacy_model": "{shared_models}/en_ud_ewt_sm"},
        "backtranslation": {
            "pivots": {
                "de": ["{fsmt}/en-de", "{fsmt}/de-en"],
                "ru": ["{fsmt}/en-ru", "{fsmt}/ru-en"],
            },
            "mer_range": [0.0, 1.0],
            "num_beams": 2,
            "batch_size": 4,
            "max_new_tokens": 10,
            "device": "cpu",
            "dtype": "float32",
        },
        "output": {"root": "{root}", "exports": []},
        "execution": {"shard_size": 100},
        "diagnostics": {"enabled": False},
    },
    "generate-cse": {
        "name": "generate-cse",
        "method": "generate_cse",
        "corpus": {"name": "wiki", "path": WIKI},
        "sample": {"size": 120, "seed": 11, "include_other": False},
        "generate_cse": {
            "generator": "{generator}",
            "views": 3,
            "seed": 4,
            "generation": {"max_new_tokens": 8, "batch_size": 8, "device": "cpu"},
        },
        "output": {"root": "{root}", "exports": []},
        "execution": {"shard_size": 100},
        "diagnostics": {"enabled": True, "cs_sample": 50},
    },
}
"""What each golden build sets; the goldens hold the complete configs these validate to."""


def golden_answer(messages: list[dict]) -> str:
    """The fake LLM's answer: a deterministic function of the whole request.

    One request in eleven is refused; the others are the input sentence (the last line of
    the last message) with a request-dependent number of its words replaced, so views of
    one anchor differ from each other and from the anchor.
    """
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
    if digest[0] % 11 == 0:
        return "I'm sorry, but I can't help with that."
    words = messages[-1]["content"].strip().splitlines()[-1].split()
    changed = 1 + digest[1] % max(1, len(words))
    for k in range(changed):
        words[digest[2 + k % 28] % len(words)] = f"word{digest[2 + k % 28] % 7}"
    return " ".join(words)


def golden_policy(body: dict) -> Action:
    """The fake server's policy: every request is answered with :func:`golden_answer`."""
    return Action.answer(golden_answer(body["messages"]))


def replace_in_strings(value: Any, pairs: list[tuple[str, str]]) -> Any:
    """``value`` (a config: dicts, lists, strings) with each ``old`` replaced by ``new`` in
    every string, in the order of ``pairs``."""
    if isinstance(value, str):
        for old, new in pairs:
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: replace_in_strings(v, pairs) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_in_strings(v, pairs) for v in value]
    return value


def substitute(value: Any, places: dict[str, str]) -> Any:
    """``value`` with every ``{placeholder}`` in its strings replaced by its path."""
    return replace_in_strings(value, [("{" + key + "}", path) for key, path in places.items()])


def placeholders_of(value: Any, places: dict[str, str]) -> Any:
    """The inverse of :func:`substitute`: paths back to their placeholders, longest first."""
    longest_first = sorted(places.items(), key=lambda kv: -len(kv[1]))
    return replace_in_strings(value, [(path, "{" + key + "}") for key, path in longest_first])


def build(config: dict[str, Any]) -> Path:
    """Plan, generate every shard and publish; the version directory."""
    from cseaug.config import RunConfig
    from cseaug.pipeline.local import run_build

    return run_build(RunConfig.model_validate(config)).version_dir


def fingerprint(version_dir: Path) -> dict[str, Any]:
    """sha256 of every data file and of rejects.parquet, and the manifest's data fingerprint."""
    files = [*sorted((version_dir / "data").glob("*.parquet")), version_dir / "rejects.parquet"]
    manifest = json.loads((version_dir / "manifest.json").read_text(encoding="utf-8"))
    return {
        "files": {
            p.relative_to(version_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in files
        },
        "data_fingerprint": manifest["fingerprints"]["data"],
        "counts": manifest["counts"],
    }


class Places:
    """The machine-specific paths of the golden configs: shared data, tiny models, the server."""

    def __init__(self, shared: Path, models: Path, server: FakeOpenAIServer) -> None:
        self.shared, self.models, self.server = shared, models, server

    def for_root(self, root: Path) -> dict[str, str]:
        return {
            "root": str(root),
            "repo": str(REPO),
            "shared_data": str(self.shared / "data"),
            "shared_models": str(self.shared / "models"),
            "fsmt": str(self.models / "fsmt"),
            "generator": str(self.models / "generator"),
            "llm_url": self.server.base_url,
        }


def build_tiny_models(directory: Path) -> Path:
    """The tiny FSMT pivots and VAEGPT-Sim generator of the goldens (fixed seeds) under ``directory``."""
    import torch

    from cseaug.vaegpt.generate import load_tokenizer
    from cseaug.vaegpt.model import VAEGPTSim
    from tests.tiny_fsmt import build_tiny_pivots
    from tests.tiny_models import build_tiny_gpt2

    build_tiny_pivots(directory / "fsmt")
    gpt2 = build_tiny_gpt2(directory / "gpt2")
    torch.manual_seed(0)
    VAEGPTSim.from_pretrained(gpt2).save_pretrained(directory / "generator", load_tokenizer(gpt2))
    return directory


@pytest.fixture(scope="module")
def places(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Places]:
    import pyarrow

    if pyarrow.__version__ != PYARROW_VERSION:
        pytest.skip(
            f"the goldens were written by pyarrow {PYARROW_VERSION} (constraints.txt); "
            f"pyarrow {pyarrow.__version__} writes other Parquet bytes"
        )
    pytest.importorskip("transformers")
    pytest.importorskip("spacy")
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the goldens were built single-threaded
    models = build_tiny_models(tmp_path_factory.mktemp("golden-models"))
    with FakeOpenAIServer(policy=golden_policy) as server:
        yield Places(shared_data.parent, models, server)
    torch.set_num_threads(threads)


GOLDENS: dict[str, Any] = (
    json.loads(GOLDEN_FILE.read_text(encoding="utf-8")) if GOLDEN_FILE.exists() else {}
)


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_rebuild_is_byte_identical(name: str, places: Places, tmp_path: Path) -> None:
    golden = GOLDENS[name]
    config = substitute(golden["config"], places.for_root(tmp_path))
    assert fingerprint(build(config)) == golden["published"]


def write_goldens(shared: Path) -> None:
    """Build every config of :data:`CONFIGS` and write ``golden_builds.json``: a golden already
    there keeps its complete config (a default changed since must not change what it builds);
    a new one records its config completed with today's defaults."""
    import tempfile

    import pyarrow
    import torch

    from cseaug.config import RunConfig

    assert pyarrow.__version__ == PYARROW_VERSION, pyarrow.__version__
    torch.set_num_threads(1)
    goldens = {}
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(policy=golden_policy) as server:
        places = Places(shared, build_tiny_models(Path(tmp) / "models"), server)
        for name, partial in CONFIGS.items():
            root = Path(tmp) / name
            paths = places.for_root(root)
            if name in GOLDENS:
                config = substitute(GOLDENS[name]["config"], paths)
            else:
                config = RunConfig.model_validate(substitute(partial, paths)).model_dump(
                    mode="json"
                )
            goldens[name] = {
                "config": placeholders_of(config, paths),
                "published": fingerprint(build(config)),
            }
            print(name, goldens[name]["published"]["counts"]["rows"], "rows", flush=True)
    GOLDEN_FILE.write_text(json.dumps(goldens, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    import os

    os.environ.update(CSEAUG_PROGRESS="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    write_goldens(REPO.parent / "shared")
