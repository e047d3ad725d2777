"""Ask an OpenAI-wire endpoint, before any work, whether it serves the configured model.

``GET /models``, else a one-token chat request; a failure is a one-line
:class:`~cseaug.errors.BackendError` naming the URL and the cause. docs/llm-backends.md.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import httpx2
import openai

from cseaug.errors import BackendError
from cseaug.llm.http_errors import describe_error
from cseaug.llm.identity import served_identity
from cseaug.llm.wire import IDENTITY_HEADERS, MalformedResponse, ResponseGuard

logger = logging.getLogger(__name__)

_NO_LIST = (404, 405, 501)  # a server without GET /models: a one-token request instead
PROBE_MAX_BYTES = 16 * 1024 * 1024  # a list of thousands of models fits
_PROBE_RETRIES = 2  # the client's own retries: a server that is starting


def probe_endpoint(
    base_url: str, api_key: str, model: str, timeout_s: float, key_variable: str = ""
) -> dict[str, Any]:
    """What ``base_url`` reports about ``model`` (its ``/models`` entry; ``{}`` without a
    list); ``key_variable`` is named when the key is refused."""
    client = openai.OpenAI(
        api_key=api_key,
        base_url=base_url,
        max_retries=_PROBE_RETRIES,
        timeout=timeout_s,
        default_headers=IDENTITY_HEADERS,
        http_client=openai.DefaultHttpxClient(
            timeout=timeout_s, event_hooks={"response": [ResponseGuard(PROBE_MAX_BYTES).check]}
        ),
    )
    try:
        return _ask(client, base_url, model)
    except openai.OpenAIError as exc:
        raise _failure(base_url, model, exc, key_variable) from None
    except MalformedResponse as exc:
        raise BackendError(f"LLM endpoint {base_url} cannot answer: {exc}") from None
    finally:
        client.close()


def _ask(client: openai.OpenAI, base_url: str, model: str) -> dict[str, Any]:
    """The model list's entry, or ``{}`` after a one-token request where there is no usable list."""
    try:
        listing = client.get("/models", cast_to=httpx2.Response)
    except openai.APIStatusError as exc:
        if exc.status_code not in _NO_LIST and exc.status_code < 500:
            raise
        unusable = "" if exc.status_code in _NO_LIST else f"failed ({describe_error(exc)})"
    else:
        if (entry := _entry(base_url, model, listing.content)) is not None:
            return entry
        unusable = "lists no models"
    body = {"model": model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
    client.post("/chat/completions", body=body, cast_to=httpx2.Response)
    if unusable:
        logger.warning(
            "LLM endpoint %s: GET /models %s; a one-token chat request for '%s' was answered, "
            "so the build goes on with it",
            base_url,
            unusable,
            model,
        )
    return {}


def probe_endpoints(
    base_urls: Sequence[str], api_key: str, model: str, timeout_s: float, key_variable: str = ""
) -> dict[str, Any]:
    """:func:`probe_endpoint` for each endpoint; one answering for the model is enough (the
    others are logged and left to the pool). A :class:`BackendError` when none answers or two
    report different weights under the model's name."""
    served: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for url in base_urls:
        try:
            served[url] = probe_endpoint(url, api_key, model, timeout_s, key_variable)
        except BackendError as exc:
            problems.append(str(exc))
    if not served:
        if len(problems) == 1:
            raise BackendError(problems[0])
        raise BackendError("no endpoint of llm.base_url can answer: " + " | ".join(problems))
    for problem in problems:
        logger.warning("%s; going on with the other endpoints", problem)
    weights = {url: served_identity(entry) for url, entry in served.items()}
    if len({json.dumps(w, sort_keys=True) for w in weights.values()}) > 1:
        listed = "; ".join(f"{url} reports {w}" for url, w in weights.items())
        raise BackendError(
            f"the endpoints of llm.base_url serve different weights as '{model}': {listed}; "
            "list only endpoints of the same model"
        )
    return next(iter(served.values()))


def _entry(base_url: str, model: str, body: bytes) -> dict[str, Any] | None:
    """The entry of ``model`` in a ``/models`` body; None for an empty list."""
    try:
        entries = json.loads(body)["data"]
        served = {entry["id"]: entry for entry in entries}
    except (ValueError, KeyError, TypeError):
        raise BackendError(
            f"LLM endpoint {base_url}: GET /models answered a body that is not a model list: "
            f"{body[:120]!r}"
        ) from None
    if not served:
        return None
    if model not in served:
        names = ", ".join(sorted(served)[:10])
        raise BackendError(
            f"LLM endpoint {base_url}: model '{model}' not served (it serves: {names}); "
            "set llm.model to one of them"
        )
    return dict(served[model])


def _failure(base_url: str, model: str, exc: BaseException, key_variable: str) -> BackendError:
    """The one-line error of a failed probe."""
    reason = describe_error(exc)
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code in (401, 403):
            where = f" in {key_variable}" if key_variable else ""
            return BackendError(
                f"LLM endpoint {base_url} refused the API key ({reason}); set a valid key{where}"
            )
        if exc.status_code == 404:
            return BackendError(
                f"LLM endpoint {base_url}: model '{model}' not served ({reason}); check llm.model "
                "and llm.base_url"
            )
        return BackendError(f"LLM endpoint {base_url} cannot answer: {reason}")
    return BackendError(
        f"LLM endpoint {base_url} cannot be reached: {reason}; start the server or fix llm.base_url"
    )
