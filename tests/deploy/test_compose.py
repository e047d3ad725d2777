"""docker-compose.yml and .env.example, checked without a Docker engine.

The file is interpolated with .env.example the way compose does it; the structure the stack
relies on is then checked service by service.
"""

from __future__ import annotations

import re
import shlex

import pytest

from tests.deploy.stack_files import (
    REPO,
    UnsetVariable,
    bare_dollars,
    deployments,
    dockerfile_instructions,
    interpolate,
    load_yaml,
    read_env_file,
    references,
)

COMPOSE_PATH = REPO / "docker-compose.yml"
ENV_EXAMPLE = read_env_file(REPO / ".env.example")
RAW = load_yaml(COMPOSE_PATH)
COMPOSE = interpolate(RAW, ENV_EXAMPLE)
SERVICES = COMPOSE["services"]
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|API_KEY")


def one_shot(name: str) -> bool:
    return SERVICES[name].get("restart") == "no"


def command_words(service: dict) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else list(command)


def test_the_stack_has_its_services_with_images_and_profiles() -> None:
    profiles = {name: service.get("profiles", []) for name, service in SERVICES.items()}
    assert profiles == {
        "postgres": [],
        "prefect-server": [],
        "deploy": [],
        "worker": [],
        "vllm": ["gpu"],
        "minio": ["storage"],
        "minio-init": ["storage"],
    }
    for name, service in SERVICES.items():
        assert service.get("image") or service.get("build"), name
    built = {name for name, service in SERVICES.items() if "build" in service}
    assert built == {"prefect-server", "deploy", "worker"}
    assert {SERVICES[name]["image"] for name in built} == {ENV_EXAMPLE["CSEAUG_IMAGE"]}
    assert all(SERVICES[name]["build"]["context"] == "." for name in built)
    assert all(SERVICES[name]["pull_policy"] == "build" for name in built), "never pulled"


def test_every_long_running_service_has_a_health_check() -> None:
    long_running = [name for name in SERVICES if not one_shot(name)]
    assert set(long_running) == {"postgres", "prefect-server", "worker", "vllm", "minio"}
    for name in long_running:
        test = SERVICES[name].get("healthcheck", {}).get("test")
        assert test and test[0] in ("CMD", "CMD-SHELL"), name


def test_dependencies_wait_for_health_or_completion() -> None:
    for name, service in SERVICES.items():
        for target, spec in service.get("depends_on", {}).items():
            assert target in SERVICES, f"{name} depends on unknown {target}"
            expected = "service_completed_successfully" if one_shot(target) else "service_healthy"
            assert spec["condition"] == expected, f"{name} -> {target}"
            # compose refuses a service whose dependency its profiles leave out
            assert set(SERVICES[target].get("profiles", [])) <= set(service.get("profiles", [])), (
                f"{name} -> {target}"
            )
    assert SERVICES["worker"]["depends_on"]["deploy"]["condition"] == (
        "service_completed_successfully"
    )


def test_state_lives_in_named_volumes() -> None:
    declared = set(COMPOSE["volumes"])
    mounts = {
        (name, mount.split(":")[0], mount.split(":")[1])
        for name, service in SERVICES.items()
        for mount in service.get("volumes", [])
    }
    named = {(name, target) for name, source, target in mounts if source in declared}
    assert {
        ("postgres", "/var/lib/postgresql/data"),
        ("worker", "/app/storage"),
        ("worker", "/home/cseaug/.cache/huggingface"),
        ("vllm", "/root/.cache/huggingface"),
        ("minio", "/data"),
    } <= named
    for name, source, _ in mounts:
        is_path = source.startswith((".", "/"))
        assert is_path or source in declared, f"{name}: volume {source} is not declared"
    used = {source for _, source, _ in mounts}
    assert declared <= used, f"declared but unused: {declared - used}"


def test_the_image_user_owns_every_path_the_stack_writes() -> None:
    """Named volumes start with the ownership of the image's directory, and the server
    copies its UI bundle to PREFECT_UI_STATIC_DIRECTORY: each must be the user's (as
    non-root, Prefect's default UI location in site-packages is not writable)."""
    chowned = [
        word
        for instruction in dockerfile_instructions(REPO / "Dockerfile")
        if instruction.keyword == "RUN"
        for command in instruction.arguments.split("&&")
        if command.split()[0] == "chown"
        for word in command.split()
        if word.startswith("/")
    ]
    written = [
        mount.split(":")[1]
        for name, service in SERVICES.items()
        if "build" in service
        for mount in service.get("volumes", [])
        if mount.split(":")[0] in COMPOSE["volumes"]
    ]
    written.append(SERVICES["prefect-server"]["environment"]["PREFECT_UI_STATIC_DIRECTORY"])
    for path in written:
        assert any(path == root or path.startswith(root + "/") for root in chowned), path


def test_prefect_server_serves_on_4200_backed_by_postgres() -> None:
    server = SERVICES["prefect-server"]
    words = command_words(server)
    assert words[:3] == ["prefect", "server", "start"]
    assert words[words.index("--host") + 1] == "0.0.0.0"
    assert words[words.index("--port") + 1] == "4200"
    assert any(port.endswith(":4200") for port in server["ports"])
    url = RAW["services"]["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"]
    assert url.startswith("postgresql+asyncpg://") and "@postgres:5432/" in url
    postgres_env = RAW["services"]["postgres"]["environment"]
    for variable in ("POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB"):
        assert references(postgres_env[variable])[0].name in {r.name for r in references(url)}
    assert "http://localhost:4200/api/health" in " ".join(server["healthcheck"]["test"])


def test_the_stack_refuses_to_start_without_a_database_password() -> None:
    without = {k: v for k, v in ENV_EXAMPLE.items() if k != "POSTGRES_PASSWORD"}
    with pytest.raises(UnsetVariable, match="POSTGRES_PASSWORD"):
        interpolate(RAW, without)


def test_the_worker_polls_the_pool_the_deployments_use() -> None:
    pools = {deployment["work_pool"]["name"] for deployment in deployments()}
    assert len(pools) == 1
    (pool,) = pools

    worker = command_words(SERVICES["worker"])
    assert worker[:3] == ["prefect", "worker", "start"]
    assert worker[worker.index("--pool") + 1] == pool
    assert "--with-healthcheck" in worker
    assert "http://localhost:8080/health" in " ".join(SERVICES["worker"]["healthcheck"]["test"])

    shell, flags, script = command_words(SERVICES["deploy"])
    assert (shell, flags) == ("sh", "-ec")
    assert f"prefect work-pool create {pool} --type process" in script
    assert "prefect deploy --all --no-prompt" in script
    for name in ("deploy", "worker"):
        assert SERVICES[name]["environment"]["PREFECT_API_URL"] == "http://prefect-server:4200/api"


def test_every_variable_is_documented_in_env_example() -> None:
    text = COMPOSE_PATH.read_text()
    used = {reference.name for reference in references(text)}
    assert used - set(ENV_EXAMPLE) == set(), "used in docker-compose.yml, not in .env.example"
    assert set(ENV_EXAMPLE) - used == set(), "in .env.example, used nowhere"
    assert bare_dollars(text) == [], "spell variables ${NAME}, and a literal dollar $$"


def test_defaults_in_the_compose_file_equal_env_example() -> None:
    for reference in references(COMPOSE_PATH.read_text()):
        if reference.op == ":-":
            assert reference.arg == ENV_EXAMPLE[reference.name], reference.name


def test_no_secret_is_written_in_the_compose_file() -> None:
    for name, service in RAW["services"].items():
        for key, value in service.get("environment", {}).items():
            if SECRET_NAME.search(key):
                (reference,) = references(value)
                assert value == f"${{{reference.name}{reference.op or ''}{reference.arg or ''}}}"
                assert reference.op in (None, ":?"), f"{name}.{key} has a default"
    text = COMPOSE_PATH.read_text()
    assert not re.search(r"sk-[A-Za-z0-9]{16,}|AKIA[0-9A-Z]{16}|hf_[A-Za-z0-9]{20,}", text)
    for key, value in ENV_EXAMPLE.items():
        if SECRET_NAME.search(key):
            assert value == "" or value.startswith("change-me"), key


def test_env_files_stay_out_of_git_and_the_image() -> None:
    assert ".env" in (REPO / ".gitignore").read_text().splitlines()
    assert ".env" in (REPO / ".dockerignore").read_text().splitlines()


def test_telemetry_is_off() -> None:
    server = SERVICES["prefect-server"]["environment"]
    assert server["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    for name in ("prefect-server", "deploy", "worker", "vllm"):
        assert SERVICES[name]["environment"]["DO_NOT_TRACK"] == "1", name
    assert SERVICES["vllm"]["environment"]["VLLM_NO_USAGE_STATS"] == "1"


def test_vllm_serves_the_configured_model_on_reserved_gpus() -> None:
    raw = RAW["services"]["vllm"]
    vllm = SERVICES["vllm"]
    assert vllm["entrypoint"] == ["vllm", "serve"]
    command = " ".join(raw["command"])
    assert raw["command"][0].startswith("${VLLM_MODEL")
    assert "--tensor-parallel-size=${VLLM_TENSOR_PARALLEL_SIZE" in command
    assert "--port=8000" in command and "--host=0.0.0.0" in command
    assert raw["environment"]["VLLM_API_KEY"] == "${VLLM_API_KEY}"
    (device,) = vllm["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
    assert raw["deploy"]["resources"]["reservations"]["devices"][0]["count"].startswith(
        "${VLLM_GPU_COUNT"
    )
    assert "http://localhost:8000/health" in " ".join(vllm["healthcheck"]["test"])
    assert any(port.endswith(":8000") for port in vllm["ports"])


def test_the_bucket_is_created_once_minio_is_healthy() -> None:
    init = SERVICES["minio-init"]
    assert init["depends_on"] == {"minio": {"condition": "service_healthy"}}
    script = init["entrypoint"][-1]
    assert "mc mb --ignore-existing" in script and "MINIO_BUCKET" in script
    assert init["environment"]["MINIO_BUCKET"] == ENV_EXAMPLE["MINIO_BUCKET"]
    worker = SERVICES["worker"]["environment"]
    assert worker["AWS_ENDPOINT_URL"] == "http://minio:9000"


def test_interpolation_follows_compose_semantics() -> None:
    env = {"SET": "value", "EMPTY": ""}
    assert interpolate("${SET}-${UNSET}", env) == "value-"
    assert interpolate("${EMPTY:-d}|${EMPTY-d}|${UNSET-d}", env) == "d||d"
    assert interpolate("${SET:+r}|${EMPTY:+r}|${EMPTY+r}", env) == "r||r"
    assert interpolate("$${SET} costs $$5", env) == "${SET} costs $5"
    with pytest.raises(UnsetVariable, match="EMPTY: needed"):
        interpolate({"a": ["${EMPTY:?needed}"]}, env)
    assert interpolate("${EMPTY?ok}", env) == ""
