"""The worker image's Dockerfile and build context, checked without a Docker engine.

Its structure is read instruction by instruction; the two RUN steps that carry logic
(torch's variant and pin, the requirements read from pyproject.toml) are executed here
with ``pip`` replaced by a recorder, so their shell and Python are really run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.stack_files import (
    REPO,
    Instruction,
    dockerfile_instructions,
    dockerfile_stages,
    dockerignore_patterns,
    is_ignored,
)

INSTRUCTIONS = dockerfile_instructions(REPO / "Dockerfile")
BUILDER, RUNTIME = dockerfile_stages(INSTRUCTIONS)


def runs(stage: list[Instruction]) -> list[str]:
    return [instruction.arguments for instruction in stage if instruction.keyword == "RUN"]


def build_arg(stage: list[Instruction], name: str) -> str:
    """The default of the stage's ``ARG name="..."``."""
    for instruction in stage:
        if instruction.keyword == "ARG" and instruction.arguments.startswith(f"{name}="):
            return shlex.split(instruction.arguments.partition("=")[2])[0]
    raise AssertionError(f"no ARG {name} in the stage")


def test_two_stages_and_the_runtime_takes_only_the_venv() -> None:
    assert BUILDER[0].arguments.endswith("AS builder")
    assert RUNTIME[0].arguments.endswith("AS runtime")
    copies = [i.arguments for i in RUNTIME if i.keyword == "COPY"]
    assert "--from=builder /opt/venv /opt/venv" in copies
    assert not any("pip install" in command for command in runs(RUNTIME))


def test_the_image_runs_as_a_non_root_user() -> None:
    users = [i for i in RUNTIME if i.keyword == "USER"]
    assert users, "no USER in the runtime stage"
    user = users[-1].arguments.split(":")[0]
    assert user not in ("root", "0")
    assert RUNTIME.index(users[-1]) > max(
        index for index, i in enumerate(RUNTIME) if i.keyword == "RUN"
    ), "a RUN after USER would run as that user; a RUN before it is the last root step"
    useradd = next(command for command in runs(RUNTIME) if "useradd" in command)
    assert f"--uid {user}" in useradd


def test_the_repository_is_the_working_directory() -> None:
    workdirs = [i.arguments for i in RUNTIME if i.keyword == "WORKDIR"]
    assert workdirs[-1] == "/app"
    assert any(i.keyword == "COPY" and i.arguments == ". /app" for i in RUNTIME)


def test_torch_goes_in_before_the_project_and_everything_under_constraints() -> None:
    commands = runs(BUILDER)
    torch_step = next(i for i, c in enumerate(commands) if "download.pytorch.org/whl/" in c)
    requirements_step = next(i for i, c in enumerate(commands) if "-r build-requirements" in c)
    project_step = next(i for i, c in enumerate(commands) if "pip install --no-deps /src" in c)
    assert torch_step < requirements_step < project_step
    assert (
        "pip install -c build-constraints.txt -r build-requirements.txt"
        in (commands[requirements_step])
    )
    for command in commands:
        for install in re.findall(r"pip install[^&]*", command):
            assert (
                "-c build-constraints.txt" in install
                or "--no-deps" in install
                or "--index-url" in install
            ), install


def test_no_secret_in_build_arguments_or_environment() -> None:
    secret = re.compile(r"PASSWORD|SECRET|TOKEN|API_KEY", re.IGNORECASE)
    for instruction in INSTRUCTIONS:
        if instruction.keyword in ("ARG", "ENV"):
            assert not secret.search(instruction.arguments), instruction


def test_the_build_context_holds_the_deployments_files_and_nothing_private() -> None:
    patterns = dockerignore_patterns(REPO / ".dockerignore")
    assert all(re.fullmatch(r"(\*\*/)?[\w.*-]+", pattern) for pattern in patterns), (
        "stack_files.is_ignored understands only NAME and **/NAME"
    )
    kept = [
        "prefect.yaml",
        "configs/wiki-sts.yaml",
        "prompts",
        "src/cseaug_prefect",
        "examples",
        "src/cseaug/config/run.py",
        "pyproject.toml",
        "README.md",
        "constraints.txt",
    ]
    left_out = [
        ".env",
        ".venv",
        ".git",
        "storage/datasets",
        "data/wiki1m_for_simcse.txt",
        "tests/conftest.py",
        "src/cseaug/config/__pycache__/run.cpython-312.pyc",
    ]
    assert [path for path in kept if is_ignored(Path(path), patterns)] == []
    assert [path for path in left_out if not is_ignored(Path(path), patterns)] == []


def run_builder_steps(workdir: Path, torch_variant: str) -> list[list[str]]:
    """Run the builder's torch and requirements RUN steps in ``workdir``; return the
    ``pip`` command lines they issued."""
    for name in ("constraints.txt", "pyproject.toml"):
        shutil.copy(REPO / name, workdir / name)
    bin_dir = workdir / "bin"
    bin_dir.mkdir()
    (bin_dir / "pip").write_text('#!/bin/sh\nprintf "%s\\n" "$*" >> "$PIP_LOG"\n')
    (bin_dir / "pip").chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PIP_LOG": str(workdir / "pip.log"),
        "TORCH_VARIANT": torch_variant,  # a build ARG is an environment variable of RUN
        "EXTRAS": build_arg(BUILDER, "EXTRAS"),
    }
    for command in runs(BUILDER)[1:3]:
        subprocess.run(["sh", "-ec", command], cwd=workdir, env=env, check=True)
    return [shlex.split(line) for line in (workdir / "pip.log").read_text().splitlines()]


@pytest.mark.parametrize("variant", ["cpu", "cu124"])
def test_builder_steps_pin_torch_of_the_variant_and_read_the_requirements(
    tmp_path: Path, variant: str
) -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11, as the image's
    pins = (REPO / "constraints.txt").read_text().splitlines()
    version = next(pin for pin in pins if pin.startswith("torch==")).split("==")[1].split("+")[0]

    torch_call, requirements_call = run_builder_steps(tmp_path, variant)

    assert torch_call == [
        "install",
        "--index-url",
        f"https://download.pytorch.org/whl/{variant}",
        f"torch=={version}+{variant}",
    ]
    constraints = (tmp_path / "build-constraints.txt").read_text().splitlines()
    assert f"torch=={version}+{variant}" in constraints
    assert len(constraints) == len(pins)

    assert " ".join(requirements_call) == (
        "install -c build-constraints.txt -r build-requirements.txt"
    )
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    expected = project["dependencies"] + [
        requirement for name in ("hf", "spacy", "s3", "dask") for requirement in extras[name]
    ]
    assert (tmp_path / "build-requirements.txt").read_text().splitlines() == expected
