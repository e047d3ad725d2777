"""The trainer reads a published version only: never the build, the LLM layer, the
augmentation stages, the corpus readers or any cache (issue 10, docs/architecture.md). Of
``readers/`` it uses the benchmark files alone; of ``dataset/`` the read side."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TRAINER = Path(__file__).resolve().parents[2] / "src" / "cseaug" / "trainer"
FORBIDDEN = (
    "cseaug.pipeline",
    "cseaug.llm",
    "cseaug.augment",
    "cseaug.vaegpt",
    "cseaug.corpus",
    "cseaug.readers",  # the corpus readers: every module but benchmarks (ALLOWED)
    "cseaug.encoders.store",  # the embedding cache
    "cseaug.dataset.shards",  # the run store of builds
    "cseaug.dataset.staging",  # the write side of versions
    "cseaug.dataset.sink",
    "prefect",
    "cseaug_prefect",
)
ALLOWED = ("cseaug.readers.benchmarks",)
"""Exceptions inside a forbidden package: the STS, STS-B and SICK files the trainer scores on."""


def _under(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _is_module(name: str) -> bool:
    """Whether ``cseaug.x.y`` is a module or package of the library (not a function in one)."""
    path = TRAINER.parents[1].joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _forbidden(name: str) -> bool:
    if _under(name, ALLOWED):
        return False
    # a cache module of the library (the LLM answers, embeddings); the Hugging Face cache
    # that every model load reads (cseaug.hub.cached_file) is not one
    return _under(name, FORBIDDEN) or (
        name.startswith("cseaug.") and "cache" in name and _is_module(name)
    )


def imported_names(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside functions, and every ``require()``d one."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "require"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.add(node.args[0].value)
    return names


MODULES = sorted(TRAINER.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(TRAINER)))
def test_trainer_modules_import_nothing_of_the_build(path: Path) -> None:
    bad = sorted(name for name in imported_names(path) if _forbidden(name))
    assert not bad, f"{path.name} imports {bad}"


def test_the_rule_sees_lazy_and_required_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f():\n    from cseaug.llm.cache import ResponseCache\n"
        "x = require('cseaug.pipeline.run', 'hf', 'p')\n"
        "from cseaug.readers.corpus import read_corpus\n"
        "from cseaug.readers.benchmarks import read_sick\n"
    )
    assert {n for n in imported_names(sample) if _forbidden(n)} == {
        "cseaug.llm.cache",
        "cseaug.llm.cache.ResponseCache",
        "cseaug.pipeline.run",
        "cseaug.readers.corpus",
        "cseaug.readers.corpus.read_corpus",
    }


SRC = TRAINER.parent.parent


def _module_file(name: str) -> Path | None:
    """The source file of a ``cseaug`` module (a package's ``__init__.py``), if it exists."""
    base = SRC.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_nothing_the_trainer_imports_imports_the_build_either() -> None:
    """Transitively: every cseaug module reachable from the trainer's imports, lazy ones included."""
    seen: set[str] = set()
    pending = [name for path in MODULES for name in imported_names(path)]
    while pending:
        name = pending.pop()
        if not name.startswith("cseaug") or name in seen:
            continue
        seen.add(name)
        path = _module_file(name)
        if path is not None and TRAINER not in path.parents:
            pending += imported_names(path)
    bad = sorted(name for name in seen if _forbidden(name))
    assert not bad, f"the trainer reaches {bad}"
