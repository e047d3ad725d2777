"""The Hugging Face hub, decided once (issue 11, item 3): offline, no library retries."""

from __future__ import annotations

from pathlib import Path

import pytest

from cseaug.hub import (
    OFFLINE_VARIABLES,
    go_offline_unless_reachable,
    model_problem,
    unreachable_reason,
)


def test_an_unreachable_hub_turns_the_process_offline_once() -> None:
    probes: list[str] = []

    def dead(endpoint: str) -> str:
        probes.append(endpoint)
        return "connection refused"

    env: dict[str, str] = {"HF_ENDPOINT": "http://mirror.example/"}
    message = go_offline_unless_reachable(env, probe=dead)
    assert probes == ["http://mirror.example"]
    assert message is not None and "unreachable (connection refused)" in message
    assert all(env[name] == "1" for name in OFFLINE_VARIABLES)
    # decided: a second call probes nothing and prints nothing
    assert go_offline_unless_reachable(env, probe=dead) is None and len(probes) == 1


def test_a_reachable_hub_or_an_offline_setting_changes_nothing() -> None:
    env: dict[str, str] = {}
    assert go_offline_unless_reachable(env, probe=lambda _: None) is None and env == {}
    offline = {"HF_HUB_OFFLINE": "1"}
    assert go_offline_unless_reachable(offline, probe=pytest.fail) is None


def test_the_probe_answers_within_its_timeout_on_a_closed_port() -> None:
    assert unreachable_reason("http://127.0.0.1:9") is not None


def test_a_model_missing_offline_is_named_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    env = {"HF_HUB_OFFLINE": "1"}
    problem = model_problem("facebook/wmt19-en-de", "backtranslation.pivots.de", env)
    assert problem is not None and "`hf download facebook/wmt19-en-de`" in problem
    assert model_problem("facebook/wmt19-en-de", "x", {}) is None  # online: it can be downloaded
    assert model_problem(str(tmp_path), "x", env) is None  # a local directory


def test_a_cached_model_can_be_had_offline(cached_hub_model) -> None:
    cached_hub_model("facebook/wmt19-en-de")
    assert model_problem("facebook/wmt19-en-de", "x", {"HF_HUB_OFFLINE": "1"}) is None
