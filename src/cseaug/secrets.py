"""Secret values never reach a file, a log line or Prefect: :func:`scrub`, the one scrubber of
every text cseaug stores or prints (docs/security.md); :func:`url_credentials_problem` keeps
credentials out of a configured URL, :func:`install_log_scrubbing` out of every log record.

Example:
    >>> import os
    >>> os.environ["EXAMPLE_API_KEY"] = "sk-example-0123456789"
    >>> scrub("401: Incorrect API key provided: sk-example-0123456789")
    '401: Incorrect API key provided: ***'
    >>> scrub("GET http://me:hunter2@example.org/v1?api_key=abc&x=1")
    'GET http://***@example.org/v1?api_key=***&x=1'
    >>> del os.environ["EXAMPLE_API_KEY"]  # the tests after this one see the environment as it was
"""

from __future__ import annotations

import logging
import os
import re
import traceback
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

MASK = "***"

MIN_SECRET_LENGTH = 8
"""Shorter values are not scrubbed: ``1`` or ``true`` in a ``*_TOKEN`` variable is no secret,
and replacing it everywhere would garble every message."""

SECRET_NAME_WORDS = frozenset({"key", "apikey", "token", "secret", "password", "credentials"})
"""A name is secret when one of its ``_``-separated words is one of these."""

_SECRET_VARIABLES: set[str] = set()  # named by treat_as_secret

# Credentials that have a shape, whatever their value: URL user info, Authorization
# header values, bearer tokens, secret-named query parameters. The "keep" group survives.
# Tokens are at least 16 characters long, so that prose ("the bearer of bad news") is left
# alone: LLM answers go through this too.
_TOKEN = r"[A-Za-z0-9._~+/=-]{16,}"
_SHAPED = re.compile(
    r"(?P<url>://)[^\s/@'\"<>]+@"  # "://" alone: matching the scheme made every word a candidate
    rf"|(?P<header>\bauthorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token)\s+)?){_TOKEN}"
    rf"|(?P<bearer>\bbearer\s+){_TOKEN}"
    r"|(?P<query>[?&](?:[A-Za-z0-9]+[_-])*(?:key|apikey|token|secret|password|credentials)=)[^&\s#'\"]+",
    re.IGNORECASE,
)


_KEY_SHAPED = re.compile(
    r"(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic ("sk-ant-..."), Stripe-like keys
    r"|(?:hf|gsk|r8|xai|glpat|ghp|gho|github_pat)[_-][A-Za-z0-9_-]{16,}"  # HF, Groq, ... keys
    r"|AIza[A-Za-z0-9_-]{30,}"  # Google API keys
    r"|(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"  # AWS access key ids
)
"""Tokens shaped like the API keys of well-known providers, wherever they stand."""


def is_secret_name(name: str) -> bool:
    """Whether a variable or config key names a secret (and not the name of one).

    Example:
        >>> [is_secret_name(n) for n in ("OPENAI_API_KEY", "api_key_env", "max_tokens")]
        [True, False, False]
    """
    words = name.lower().split("_")
    return bool(SECRET_NAME_WORDS.intersection(words)) and words[-1] != "env"


def treat_as_secret(variable: str) -> None:
    """Scrub the value of ``variable`` from now on, whatever its name (``llm.api_key_env``)."""
    _SECRET_VARIABLES.add(variable)


def _mask_shaped(match: re.Match[str]) -> str:
    kept = next(group for group in match.groups() if group is not None)
    return kept + (MASK + "@" if match.group("url") else MASK)


class Scrubber:
    """:func:`scrub` with the secret values of the environment read once, for many texts in a
    row, and ``secrets`` besides them (e.g. the key being sent); the longest value is replaced
    first, so that no part of one survives.

    Example:
        >>> Scrubber(["sk-abcdefgh-1234"])("key sk-abcdefgh-1234 refused")
        'key *** refused'
    """

    def __init__(self, secrets: Iterable[str] = ()):
        named = (v for k, v in os.environ.items() if k in _SECRET_VARIABLES or is_secret_name(k))
        values = {value for value in (*named, *secrets) if len(value) >= MIN_SECRET_LENGTH}
        longest_first = sorted(values, key=lambda v: (-len(v), v))
        self._values = re.compile("|".join(map(re.escape, longest_first))) if values else None

    def __call__(self, text: str) -> str:
        if not text:
            return text
        if self._values is not None:
            text = self._values.sub(MASK, text)
        return _SHAPED.sub(_mask_shaped, text)


def scrub(text: str) -> str:
    """``text`` with every known secret value and credential-shaped string replaced by ``***``.

    Example:
        >>> scrub("Authorization: Bearer abcdef.0123456789.xyz")
        'Authorization: Bearer ***'
    """
    return Scrubber()(text)


def scrub_data(data: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, strings) with every string scrubbed.

    Example:
        >>> scrub_data({"url": "http://u:p@h/v1", "n": [1, "the bearer of news"]})
        {'url': 'http://***@h/v1', 'n': [1, 'the bearer of news']}
    """
    if isinstance(data, str):
        return scrub(data)
    if isinstance(data, Mapping):
        return {key: scrub_data(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [scrub_data(value) for value in data]
    return data


def holds_secret(text: str) -> bool:
    """Whether :func:`scrub` would change ``text``.

    Example:
        >>> holds_secret("http://127.0.0.1:8000/v1"), holds_secret("http://u:p@h/v1")
        (False, True)
    """
    return scrub(text) != text


def url_credentials_problem(url: str, setting: str) -> str | None:
    """Why the URL configured at ``setting`` must not be used, or None: user info, secret-named
    query parameters and key-looking tokens anywhere in it, as written or percent-encoded,
    would be stored in ``plan.json``, the manifest and Prefect's database with the URL. The
    message never repeats the URL.

    Example:
        >>> url_credentials_problem("http://127.0.0.1:8000/v1", "llm.base_url") is None
        True
        >>> print(url_credentials_problem("http://u:s@127.0.0.1/v1", "llm.base_url"))
        llm.base_url must not carry credentials (user:password@); put the key in an environment variable and name it in llm.api_key_env (default OPENAI_API_KEY)
        >>> url_credentials_problem("https://gw.example/v1#api_key=abc", "llm.base_url")[:55]
        'llm.base_url must not carry credentials (a key-looking '
    """
    return _credentials_problem(url, setting) or _credentials_problem(_decoded(url), setting)


def _decoded(text: str) -> str:
    """``text`` percent-decoded until nothing changes (``%2573`` is ``%73``, then ``s``)."""
    before = None
    while text != before:  # each change makes the text shorter: the loop ends
        text, before = unquote(text), text
    return text


def _credentials_problem(url: str, setting: str) -> str | None:
    """:func:`url_credentials_problem` of one spelling of the URL."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None  # not a URL at all: the client reports that with the URL's own error
    fix = "put the key in an environment variable and name it in llm.api_key_env (default OPENAI_API_KEY)"
    if parts.username is not None or parts.password is not None:
        return f"{setting} must not carry credentials (user:password@); {fix}"
    for where, text in (
        ("host", parts.netloc),
        ("path", parts.path),
        ("query", parts.query),
        ("fragment", parts.fragment),
    ):
        if _key_looking(text):
            return (
                f"{setting} must not carry credentials (a key-looking token in its {where}); {fix}"
            )
    return None


def _key_looking(text: str) -> bool:
    """Whether a part of a URL holds a key: a secret-named ``name=value`` (or
    ``name:value``) part, a token shaped like a provider's key (:data:`_KEY_SHAPED`), or
    anything :func:`scrub` masks (a secret of the environment, a bearer token, ...)."""
    for part in re.split(r"[/;&]", text):
        name, _, value = part.partition("=") if "=" in part else part.partition(":")
        if value and is_secret_name(name.replace("-", "_")):
            return True
    return bool(_KEY_SHAPED.search(text)) or holds_secret(text)


_SCRUBBING_FACTORY = "_cseaug_scrubbing"


def install_log_scrubbing() -> None:
    """Scrub every log record this process creates, message and traceback, from now on: the
    log record factory is wrapped (once), so every handler is covered, Prefect's included."""
    previous = logging.getLogRecordFactory()
    if getattr(previous, _SCRUBBING_FACTORY, False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        return _scrubbed_record(previous(*args, **kwargs))

    setattr(factory, _SCRUBBING_FACTORY, True)
    logging.setLogRecordFactory(factory)


def _scrubbed_record(record: logging.LogRecord) -> logging.LogRecord:
    try:
        message = record.getMessage()
    except Exception:  # a malformed call: logging reports it when the record is emitted
        return record
    clean = scrub(message)
    if clean != message:
        record.msg, record.args = clean, ()
    if record.exc_info and record.exc_info[0] is not None:
        # Formatters use exc_text when it is set: the traceback is formatted (and
        # scrubbed) once here instead of from exc_info by each handler.
        record.exc_text = scrub("".join(traceback.format_exception(*record.exc_info)).rstrip())
    return record
