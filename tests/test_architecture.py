"""docs/architecture.md stays true: every room listed, no upward import, no cycle, Prefect on top.

The layers are read from the table in docs/architecture.md, so the document is what the
code is checked against. Imports are read from the source (module level and inside
functions alike), not by importing anything.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "cseaug"
DOC = REPO / "docs" / "architecture.md"
PREFECT_NAMES = ("prefect", "flows", "tasks", "cseaug_prefect")
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
    """The top-level modules (``config.py``) and packages (``build/``) of the library."""
    return {p.name for p in PACKAGE.glob("*.py")} | {
        f"{p.name}/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()
    }


def room_of(module: str) -> str | None:
    """``cseaug.build.run`` -> ``build/``, ``cseaug.config`` -> ``config.py``."""
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
    """(imported module, line, at module level) of every import statement of a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
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
            yield name, node.lineno, id(node) in top


def sources() -> list[tuple[str, Path]]:
    return [(room_of(_module(p)) or "", p) for p in sorted(PACKAGE.rglob("*.py"))]


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
        f"{path.relative_to(REPO)}:{line} imports {name} at module level"
        for _, path in sources()
        for name, line, top in imports(path)
        if top and name.split(".")[0] in HEAVY
    ]
    assert not found, "\n".join(found)
