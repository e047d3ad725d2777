"""docs/architecture.md stays true: every room listed, no upward import, no cycle, Prefect on top.

The layers are read from the table in docs/architecture.md, so the document is what the
code is checked against. Imports are read from the source (module level and inside
functions alike), not by importing anything. The Prefect glue (``src/cseaug_prefect``) sits
above the library: it may import the library and Prefect, the library never imports it,
tasks never import flows, and neither imports a heavy package when it is loaded.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "cseaug"
GLUE = REPO / "src" / "cseaug_prefect"
"""The Prefect glue: ``cseaug_prefect.flows`` and ``cseaug_prefect.tasks``."""
DOC = REPO / "docs" / "architecture.md"
PREFECT_NAMES = ("prefect", "cseaug_prefect")
HEAVY = ("torch", "transformers", "spacy", "sentence_transformers", "vllm")


def layers() -> dict[str, int]:
    """Room -> layer number, from the doc's layer table (``| 2 materials | `corpus/` ... |``)."""
    section = DOC.read_text(encoding="utf-8").split("## Layers", 1)[1].split("\n## ", 1)[0]
    found: dict[str, int] = {}
    for line in section.splitlines():
        row = re.match(r"\|\s*(\d+)\s[^|]*\|(.*)\|\s*$", line)
        if row:
            for name in re.findall(r"`([^`]+)`", row.group(2)):
                assert name not in found, f"{name} is in two layers of {DOC.name}"
                found[name] = int(row.group(1))
    return found


def rooms() -> set[str]:
    """The top-level modules (``errors.py``) and packages (``config/``) of the library."""
    return {p.name for p in PACKAGE.glob("*.py")} | {
        f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()
    }


def room_of(module: str) -> str | None:
    """``cseaug.pipeline.run`` -> ``pipeline/``, ``cseaug.errors`` -> ``errors.py``."""
    parts = module.split(".")
    if parts[0] != "cseaug":
        return None
    name = parts[1] if len(parts) > 1 else ""
    if name and (PACKAGE / name / "__init__.py").is_file():
        return f"{name}/"
    if name and (PACKAGE / f"{name}.py").is_file():
        return f"{name}.py"
    return "__init__.py"  # the package itself, or a name it defines (``__version__``)


def imports(path: Path) -> Iterator[tuple[str, int, bool]]:
    """(imported module, line, run when the file is imported) of every import statement of a
    file; the last is true at module level, inside module-level ``try``, ``if``, ``with``,
    loops and class bodies too, but not under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    on_import = {id(node) for node in _run_on_import(tree.body)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "cseaug":
                names = [f"cseaug.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            yield name, node.lineno, id(node) in on_import


def _run_on_import(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of ``body`` that run when the module is imported, nested blocks included
    (function bodies run later; ``if TYPE_CHECKING:`` never runs, its ``else`` does)."""
    for node in body:
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _run_on_import(node.orelse)
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _run_on_import(getattr(node, field, []))
        for handler in getattr(node, "handlers", []):
            yield from _run_on_import(handler.body)


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def sources() -> list[tuple[str, Path]]:
    return [(room_of(_module(p)) or "", p) for p in sorted(PACKAGE.rglob("*.py"))]


def glue_sources() -> list[Path]:
    """Every module of the Prefect glue."""
    return sorted(GLUE.rglob("*.py"))


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_room_is_in_the_picture_and_every_listed_room_exists() -> None:
    listed = set(layers())
    assert not rooms() - listed, f"add {sorted(rooms() - listed)} to the layers of {DOC}"
    assert not listed - rooms(), f"{sorted(listed - rooms())} in {DOC} do not exist"
    text = DOC.read_text(encoding="utf-8")
    undescribed = [r for r in sorted(rooms() - {"__init__.py"}) if f"| `{r}` |" not in text]
    assert not undescribed, f"describe {undescribed} in the rooms table of {DOC}"


def test_no_room_imports_a_room_of_a_higher_layer() -> None:
    layer = layers()
    upward = [
        f"{path.relative_to(REPO)}:{line} imports {name} ({target}, layer {layer[target]}) "
        f"from {source} (layer {layer[source]})"
        for source, path in sources()
        for name, line, _ in imports(path)
        if (target := room_of(name)) and layer[target] > layer[source]
    ]
    assert not upward, "\n".join(upward)


def test_rooms_import_each_other_without_cycles() -> None:
    graph: dict[str, set[str]] = {room: set() for room in rooms()}
    for source, path in sources():
        for name, _, _ in imports(path):
            target = room_of(name)
            if target and target != source:
                graph[source].add(target)
    done: set[str] = set()

    def visit(room: str, trail: list[str]) -> None:
        if room in trail:
            pytest.fail("import cycle: " + " -> ".join([*trail[trail.index(room) :], room]))
        if room in done:
            return
        for target in sorted(graph[room]):
            visit(target, [*trail, room])
        done.add(room)

    for room in sorted(graph):
        visit(room, [])


FLOW_COMMANDS = {
    PACKAGE / "commands" / "build.py": {
        "cseaug_prefect.flows.build_hybrid_dataset",
        "cseaug_prefect.flows.temporary_server",  # started before the flow's module is imported
    },
    PACKAGE / "commands" / "train.py": {"cseaug_prefect.flows.train_sentence_encoder"},
}
"""The commands that start a Prefect flow, and the glue modules each imports (its flow's)."""


def test_only_the_flow_commands_import_the_prefect_glue() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line} imports {name}"
        for _, path in sources()
        for name, line, _ in imports(path)
        if name.split(".")[0] in PREFECT_NAMES and path not in FLOW_COMMANDS
    ]
    assert not found, "\n".join(found)
    for command, flow in FLOW_COMMANDS.items():
        glue = {name for name, _, _ in imports(command) if name.split(".")[0] in PREFECT_NAMES}
        assert glue == flow, command.name


def test_heavy_packages_are_imported_inside_functions() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line} imports {name} when the module is imported"
        for path in [p for _, p in sources()] + glue_sources()
        for name, line, on_import in imports(path)
        if on_import and name.split(".")[0] in HEAVY
    ]
    assert not found, "\n".join(found)


def test_heavy_imports_in_module_level_blocks_are_found(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "try:\n    import torch\nexcept ImportError:\n    import spacy\n"
        "if TYPE_CHECKING:\n    import vllm\nelse:\n    import transformers\n"
        "def f():\n    import sentence_transformers\n",
        encoding="utf-8",
    )
    on_import = {name for name, _, top in imports(module) if top}
    assert on_import == {"typing", "torch", "spacy", "transformers"}


def test_tasks_never_import_flows() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line} imports {name}"
        for path in (GLUE / "tasks").rglob("*.py")
        for name, line, _ in imports(path)
        if name.startswith("cseaug_prefect.flows")
    ]
    assert not found, "\n".join(found)
