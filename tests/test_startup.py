"""A command imports only what it runs (issue 14: `--help` in <= 1 s, `--dry-run` in <= 3 s).

Timings are the benchmark's (benchmarks/bench_startup.py); these tests check the cause
deterministically, in a fresh interpreter: which heavy modules a command has imported when
it is done. Before issue 14, `import cseaug.cli` alone took 4.3 s, 3.0 s of it in
`dataset.export` -> `pyarrow.dataset` -> pandas.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

HEAVY = (
    "pyarrow",
    "pyarrow.dataset",
    "pandas",
    "numpy",
    "torch",
    "transformers",
    "sentence_transformers",
    "matplotlib",
    "spacy",
    "prefect",
    "openai",
)
"""Modules none of which `import cseaug.cli` nor any `--help` may import."""

NOT_IN_A_DRY_RUN = (
    "torch",
    "transformers",
    "sentence_transformers",
    "matplotlib",
    "spacy",
    "prefect",
)
"""A dry run of an endpoint build reads the corpus (pyarrow) but loads no model and starts no flow."""


def imported_after(code: str, cwd: Path | None = None) -> set[str]:
    """The modules of :data:`HEAVY` imported once ``code`` has run in a fresh interpreter."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"print('\\nIMPORTED', json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    )
    env = {**os.environ, "CSEAUG_PROGRESS": "0", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    marker = done.stdout.rsplit("IMPORTED ", 1)[1]
    return set(json.loads(marker))


def run_cli(*args: str) -> str:
    """Python that runs ``cseaug ARGS`` as the script does, ending quietly on its exit."""
    return (
        "import sys\n"
        f"sys.argv = ['cseaug', *{list(args)!r}]\n"
        "from cseaug.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
    )


def test_importing_the_cli_imports_no_heavy_module() -> None:
    assert imported_after("import cseaug.cli") == set()


def test_help_of_every_command_imports_no_heavy_module() -> None:
    import typer.main

    from cseaug.cli import app

    group = typer.main.get_group(app)
    commands = [[name] for name in group.commands]
    for name, command in group.commands.items():
        commands += [[name, sub] for sub in getattr(command, "commands", {})]
    code = "\n".join(
        [
            "from typer.testing import CliRunner",
            "from cseaug.cli import app",
            "runner = CliRunner()",
            f"for args in {[[*c, '--help'] for c in [[], *commands]]!r}:",
            "    result = runner.invoke(app, args)",
            "    assert result.exit_code == 0, (args, result.output)",
        ]
    )
    assert len(commands) >= 10  # build, versions, show, export, diagnose, data fetch, ...
    assert imported_after(code) == set()


def test_a_dry_run_loads_no_model_and_starts_no_flow(tmp_path: Path) -> None:
    from tests.fake_openai_server import FakeOpenAIServer

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"A sentence number {i} about a river.\n" for i in range(40)))
    config = tmp_path / "config.yaml"
    # the dry run checks the endpoint like the build does (issue 11): one that answers
    with FakeOpenAIServer() as server:
        config.write_text(
            yaml.safe_dump(
                {
                    "name": "startup",
                    "method": "sts",
                    "corpus": {"path": str(corpus)},
                    "sample": {"size": 8},
                    "patterns": {"source": "paper"},
                    "llm": {
                        "backend": "openai-compatible",
                        "model": "fake",
                        "base_url": server.base_url,
                    },
                    "output": {"root": str(tmp_path / "storage")},
                }
            )
        )
        imported = imported_after(run_cli("build", "--config", str(config), "--dry-run"))
        assert sum(server.counts.values()) == 0  # the probe lists models; no prompt is sent
    assert imported.isdisjoint(NOT_IN_A_DRY_RUN), imported
