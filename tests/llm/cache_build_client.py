"""A build's LLM step in its own process, for the crash-and-resume test of the cache.

Usage: python cache_build_client.py BASE_URL CACHE_PATH N OUT_JSON

Asks N distinct questions through ``make_backend`` (openai-compatible, cached, concurrency
8) and writes ``{key: text}`` of every answer to OUT_JSON when all have arrived.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cseaug.config import LLMConfig
from cseaug.llm.base import ChatRequest
from cseaug.llm.factory import make_backend

CONCURRENCY = 8


def main() -> None:
    base_url, cache_path, n, out = (
        sys.argv[1],
        Path(sys.argv[2]),
        int(sys.argv[3]),
        Path(sys.argv[4]),
    )
    cfg = LLMConfig(
        backend="openai-compatible", model="fake", base_url=base_url, concurrency=CONCURRENCY
    )
    backend = make_backend(cfg, cache_path)
    requests = [
        ChatRequest(f"q{i}", ({"role": "user", "content": f"question {i}"},)) for i in range(n)
    ]
    responses = backend.generate(requests)
    backend.close()
    out.write_text(json.dumps({r.key: r.text for r in responses if r.ok}))


if __name__ == "__main__":
    main()
