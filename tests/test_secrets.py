"""The scrubber every stored or printed text goes through, and the URL credentials check."""

from __future__ import annotations

import io
import logging

import pytest

from cseaug import secrets
from cseaug.secrets import (
    Scrubber,
    holds_secret,
    install_log_scrubbing,
    is_secret_name,
    scrub,
    scrub_data,
    treat_as_secret,
    url_credentials_problem,
)

KEY = "sk-test-SECRET-1234567890"


@pytest.fixture()
def openai_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("HF_TOKEN", True),
        ("DB_PASSWORD", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("api_key", True),
        ("api_key_env", False),  # names a variable, holds no secret
        ("max_tokens", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("PWD", False),
        ("KEYRING_BACKEND", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_known_values_of_secret_variables_are_scrubbed(openai_key: str) -> None:
    message = f"Error code: 401 - Incorrect API key provided: {openai_key}."
    assert scrub(message) == "Error code: 401 - Incorrect API key provided: ***."
    assert holds_secret(message)


def test_longest_value_first_so_no_part_survives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A_TOKEN", "abcdefgh")
    monkeypatch.setenv("B_TOKEN", "abcdefgh-and-more")
    assert scrub("x abcdefgh-and-more y") == "x *** y"


def test_short_or_unrelated_values_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """``true`` in a *_TOKEN variable is no secret; a plain variable's value is not one either."""
    monkeypatch.setenv("FEATURE_TOKEN", "true")
    monkeypatch.setenv("CSEAUG_EXAMPLE_SETTING", "some-long-plain-value")
    assert scrub("true and some-long-plain-value") == "true and some-long-plain-value"


def test_a_variable_named_secret_explicitly_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    """``llm.api_key_env`` may name any variable: the backend marks it secret."""
    monkeypatch.setenv("LLM_CREDENTIAL_VAR", "value-that-is-secret")
    monkeypatch.setattr(secrets, "_SECRET_VARIABLES", set())
    assert scrub("got value-that-is-secret") == "got value-that-is-secret"
    treat_as_secret("LLM_CREDENTIAL_VAR")
    assert scrub("got value-that-is-secret") == "got ***"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://user:pa55@10.0.0.1:8000/v1", "http://***@10.0.0.1:8000/v1"),
        ("postgres://admin@db/x", "postgres://***@db/x"),
        ("Authorization: Bearer abcdefghijklmnop0123", "Authorization: Bearer ***"),
        ('{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}', '{"authorization": "Basic ***"}'),
        ("bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "bearer ***"),
        ("GET /v1/models?api_key=abc123&x=1", "GET /v1/models?api_key=***&x=1"),
        ("https://h/x?access_token=zz#f", "https://h/x?access_token=***#f"),
    ],
)
def test_credential_shapes_are_scrubbed(text: str, expected: str) -> None:
    assert scrub(text) == expected


@pytest.mark.parametrize(
    "prose",
    [
        "He was the bearer of bad news.",
        "The ring bearer walked in.",
        "Authorization: granted",
        "Write to a@b.org or see https://example.org/path?page=2.",
        "The key=value pairs are listed.",
    ],
)
def test_prose_is_left_alone(prose: str) -> None:
    """LLM answers go through the scrubber too: ordinary sentences must survive it."""
    assert scrub(prose) == prose


def test_scrub_data_walks_json(openai_key: str) -> None:
    data = {"a": [f"key {openai_key}", 3, None], "b": {"url": "http://u:p@h/v1"}}
    assert scrub_data(data) == {"a": ["key ***", 3, None], "b": {"url": "http://***@h/v1"}}


def test_scrubber_takes_extra_values() -> None:
    assert Scrubber(["extra-secret-value"])("an extra-secret-value here") == "an *** here"


@pytest.mark.parametrize(
    "url",
    [
        "http://user:secret-pass@127.0.0.1:8000/v1",
        "http://:secret-pass@127.0.0.1/v1",
        "https://token-only@example.org/v1",
        "http://127.0.0.1:8000/v1?api_key=secret-pass",
    ],
)
def test_urls_with_credentials_are_refused_without_repeating_them(url: str) -> None:
    problem = url_credentials_problem(url, "llm.base_url")
    assert problem is not None
    assert "environment variable" in problem and "llm.api_key_env" in problem
    assert "secret-pass" not in problem and "token-only" not in problem


def test_plain_urls_pass() -> None:
    for url in ("http://127.0.0.1:8000/v1", "https://api.openai.com/v1?x=1"):
        assert url_credentials_problem(url, "llm.base_url") is None


def test_log_records_are_scrubbed_message_and_traceback(openai_key: str) -> None:
    """Every handler sees the scrubbed record: Prefect's API handler stores what it formats."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("cseaug.test.scrubbing")
    logger.addHandler(handler)
    logger.propagate = False
    original = logging.getLogRecordFactory()
    try:
        install_log_scrubbing()
        install_log_scrubbing()  # a second call changes nothing
        logger.warning("sent %s to http://u:p@h/v1", openai_key)
        try:
            raise RuntimeError(f"server said: Incorrect API key provided: {openai_key}")
        except RuntimeError:
            logger.exception("request failed")
    finally:
        logging.setLogRecordFactory(original)
        logger.removeHandler(handler)
    out = stream.getvalue()
    assert openai_key not in out
    assert "sent *** to http://***@h/v1" in out
    assert "Incorrect API key provided: ***" in out and "RuntimeError" in out
