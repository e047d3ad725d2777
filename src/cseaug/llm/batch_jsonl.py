"""The JSONL files of the OpenAI Batch API: the requests going up, the results coming down.

A 200 result is parsed as the ``openai`` backend parses a body; a request the batch never ran
has no result and is sent again. docs/llm-backends.md, "The Batch API".

Example:
    >>> line = request_line("k1", {"model": "m", "messages": []})
    >>> json.loads(line)["url"]
    '/v1/chat/completions'
    >>> out = b'{"custom_id": "k1", "response": {"status_code": 200, "body": {"choices": [{"message": {"content": "Hi"}}]}}, "error": null}'
    >>> read_results(out)["k1"].text
    'Hi'
    >>> read_results(b'{"custom_id": "k2", "response": null, "error": {"code": "batch_expired", "message": "late"}}')
    {}
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from cseaug.llm.base import ChatResponse
from cseaug.llm.wire import parse_completion

BATCH_ENDPOINT = "/v1/chat/completions"
MAX_REQUESTS_PER_BATCH = 50_000  # the API's limit
MAX_BATCH_FILE_BYTES = 190 * 1024 * 1024  # below the API's 200 MB
NOT_RUN_CODES = frozenset({"batch_expired", "batch_cancelled"})  # sent again, not rejected


def request_line(custom_id: str, body: dict[str, Any]) -> bytes:
    """One input line: a chat completion request named ``custom_id``."""
    line = {"custom_id": custom_id, "method": "POST", "url": BATCH_ENDPOINT, "body": body}
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def split_into_files(
    lines: Iterable[tuple[str, bytes]],
    max_requests: int = MAX_REQUESTS_PER_BATCH,
    max_bytes: int = MAX_BATCH_FILE_BYTES,
) -> list[tuple[list[str], bytes]]:
    """Group ``(custom_id, line)`` pairs into input files within the API's limits, in order.

    Example:
        >>> [ids for ids, _ in split_into_files([("a", b"1\\n"), ("b", b"2\\n"), ("c", b"3\\n")], max_requests=2)]
        [['a', 'b'], ['c']]
    """
    files: list[tuple[list[str], bytearray]] = []
    for custom_id, line in lines:
        ids, content = files[-1] if files else ([], bytearray())
        if not ids or len(ids) == max_requests or len(content) + len(line) > max_bytes:
            ids, content = [], bytearray()
            files.append((ids, content))
        ids.append(custom_id)
        content += line
    return [(ids, bytes(content)) for ids, content in files]


def _error_reason(record: dict[str, Any]) -> str:
    response = record.get("response") or {}
    body = response.get("body") if isinstance(response, dict) else None
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict):
        return f"HTTP {response.get('status_code')}: {detail.get('message') or detail}"
    error = record.get("error") or {}
    if isinstance(error, dict) and error:
        return f"batch request failed: {error.get('code')}: {error.get('message')}"
    return f"batch result without an answer: {json.dumps(record)[:200]}"


def read_results(content: bytes) -> dict[str, ChatResponse]:
    """The results in an output or error file by ``custom_id``, without the requests the batch
    never ran and the lines that name no request."""
    results: dict[str, ChatResponse] = {}
    for raw in content.splitlines():
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
            custom_id = record["custom_id"]
        except (ValueError, KeyError, TypeError):
            continue
        error = record.get("error") or {}
        if isinstance(error, dict) and error.get("code") in NOT_RUN_CODES:
            continue
        response = record.get("response") or {}
        if isinstance(response, dict) and response.get("status_code") == 200:
            results[custom_id] = parse_completion(custom_id, json.dumps(response["body"]).encode())
        else:
            results[custom_id] = ChatResponse(key=custom_id, error=_error_reason(record))
    return results
