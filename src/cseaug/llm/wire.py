"""What cseaug accepts from an OpenAI-wire server: a bounded body, a chat completion, no detour.

A redirect to another origin ends the build; anything else a server may send is at worst a
``malformed_response`` reject. docs/llm-backends.md, "The HTTP backends"; docs/reliability.md.

Example:
    >>> parse_completion("k", b'{"choices": [{"message": {"content": "Hi"}}]}').text
    'Hi'
    >>> parse_completion("k", b'{"choices": [{"message": {"content": "Hi"}}], "usage": 3}').error
    'malformed response body (usage is not an object): b\\'{"choices": [{"message": {"content": "Hi"}}], "usage": 3}\\''
"""

from __future__ import annotations

import json
from typing import Any

import httpx2

from cseaug.errors import BackendError
from cseaug.llm.base import MALFORMED, PERMANENT, ChatResponse

BYTES_PER_TOKEN = 64  # a token: a few characters, each at most 12 bytes JSON-escaped
ENVELOPE_BYTES = 64 * 1024  # ids, usage, finish_reason, logprobs added unasked, whitespace
UNBOUNDED_MAX_TOKENS = 32_768  # assumed when a request sets no max_tokens
MAX_JSON_DEPTH = 64  # deepest nesting of a body (a chat completion has 5)
MAX_TOKEN_COUNT = 2**31 - 1  # largest token count usage may report
IDENTITY_HEADERS = {"Accept-Encoding": "identity"}  # an uncompressed body: its size is its size


class MalformedResponse(Exception):
    """A response cseaug refuses to read further; the message says why."""


class RedirectRefused(BackendError):
    """The endpoint redirected a request to another origin (ends the build)."""


def body_limit(max_tokens: int | None) -> int:
    """Most bytes the body of an answer of at most ``max_tokens`` tokens may have.

    Example:
        >>> body_limit(64)
        69632
    """
    return ENVELOPE_BYTES + BYTES_PER_TOKEN * (max_tokens or UNBOUNDED_MAX_TOKENS)


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


class ResponseGuard:
    """An ``httpx2`` response hook checking each response before its body is read: a redirect
    to another origin is :class:`RedirectRefused`; one to no URL, a compressed body or one
    announcing more than ``max_bytes`` is :class:`MalformedResponse`."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes

    def check(self, response: httpx2.Response) -> None:
        if response.has_redirect_location:
            try:
                target = response.request.url.join(response.headers["Location"])
            except httpx2.InvalidURL:
                raise MalformedResponse(
                    f"malformed response (HTTP {response.status_code} to a Location that is "
                    "not a URL)"
                ) from None
            if _origin(target) != _origin(response.request.url):
                source = response.request.url.copy_with(query=None, fragment=None)
                raise RedirectRefused(
                    f"LLM endpoint {source} redirected the request to another origin "
                    f"({target.scheme}://{target.netloc.decode()}, HTTP {response.status_code}); "
                    "cseaug does not send prompts to a server it was not given: set llm.base_url "
                    "to the server that answers"
                )
            return
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise MalformedResponse(
                f"malformed response body (compressed with {encoding!r}, although only an "
                "uncompressed body was accepted)"
            )
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise MalformedResponse(_too_large(self.max_bytes, f"announces {declared} bytes"))

    async def acheck(self, response: httpx2.Response) -> None:
        self.check(response)


def _too_large(limit: int, what: str) -> str:
    return (
        f"malformed response body ({what}, over the {limit} bytes an answer of llm.max_tokens "
        "tokens can take)"
    )


async def read_body(response: httpx2.Response, limit: int) -> bytes:
    """The raw body of a streamed ``response``; :class:`MalformedResponse` (the rest unread)
    once it passes ``limit`` bytes."""
    body = bytearray()
    async for chunk in response.aiter_raw():
        body += chunk
        if len(body) > limit:
            raise MalformedResponse(_too_large(limit, f"more than {limit} bytes"))
    return bytes(body)


def _depth(data: Any) -> int:
    """How deeply ``data`` nests objects and arrays, counted without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, depth)
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items if isinstance(item, dict | list))
    return deepest


def _token_count(usage: dict[str, Any], field: str) -> int | None:
    """``usage[field]`` as a count (absent or null: 0); None when it is not a valid count."""
    value = usage.get(field)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_TOKEN_COUNT else None


def _malformed(key: str, what: str, body: bytes) -> ChatResponse:
    return ChatResponse(
        key=key, error=f"malformed response body ({what}): {body[:200]!r}", failure=MALFORMED
    )


def parse_completion(key: str, body: bytes, max_tokens: int | None = None) -> ChatResponse:
    """The response of a chat completion body: a :data:`MALFORMED` failure for anything else; a
    permanent one for an answer without text or cut at ``max_tokens`` (half a sentence).

    Example:
        >>> parse_completion("k", b'{"choices": [{"message": {"content": "Hi"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}').completion_tokens
        1
        >>> parse_completion("k", b'oops').error
        "malformed response body (not JSON): b'oops'"
    """
    try:
        data = json.loads(body)
        too_deep = _depth(data) > MAX_JSON_DEPTH
    except ValueError:  # includes UnicodeDecodeError: bytes that are not UTF-8
        return _malformed(key, "not JSON", body)
    except RecursionError:
        too_deep = True
    if too_deep:
        return _malformed(key, f"nested deeper than {MAX_JSON_DEPTH} levels", body)
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return _malformed(key, "no choices[0].message.content", body)
    reason = choice.get("finish_reason") if isinstance(choice, dict) else None
    if not isinstance(text, str):
        return ChatResponse(
            key=key, error=f"answer has no text content (finish_reason={reason})", failure=PERMANENT
        )
    if reason == "length":
        return ChatResponse(
            key=key,
            error="answer cut at llm.max_tokens (finish_reason=length); raise llm.max_tokens",
            failure=PERMANENT,
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _malformed(key, "answer text is not valid Unicode (a lone surrogate)", body)
    usage = {} if data.get("usage") is None else data["usage"]
    if not isinstance(usage, dict):
        return _malformed(key, "usage is not an object", body)
    prompt_tokens = _token_count(usage, "prompt_tokens")
    completion_tokens = _token_count(usage, "completion_tokens")
    if prompt_tokens is None or completion_tokens is None:
        return _malformed(
            key, f"usage token counts are not whole numbers 0..{MAX_TOKEN_COUNT}", body
        )
    if max_tokens is not None and completion_tokens > max_tokens:
        return _malformed(
            key, f"usage.completion_tokens {completion_tokens} above max_tokens {max_tokens}", body
        )
    model = data.get("model")
    return ChatResponse(
        key=key,
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        model=model if isinstance(model, str) and model else None,
    )
