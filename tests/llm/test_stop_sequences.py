"""Stop sequences on the wire: NGCSE's one-sentence views send ``stop: ["\\n"]``, SKICSE's
knowledge none (docs/prompts-and-patterns.md, "Stop sequences"). The transformers backend's
stopping runs against the real model in tests/llm/test_real_model.py, vLLM's in
tests/llm/test_vllm_backend.py."""

from __future__ import annotations

import pyarrow as pa
import pytest

from cseaug.config import load_config
from cseaug.llm.factory import make_backend
from cseaug.pipeline.stages import make_llm_stage
from tests.fake_openai_server import FakeOpenAIServer

DEMO = "configs/demo.yaml"


@pytest.mark.parametrize(("method", "stop"), [("sts", ["\n"]), ("nli", ["\n"]), ("ski", None)])
def test_each_method_sends_its_stop_sequences(
    server: FakeOpenAIServer, method: str, stop: list[str] | None
) -> None:
    cfg = load_config(
        DEMO,
        [
            f"method={method}",
            "llm.backend=openai-compatible",
            f"llm.base_url={server.base_url}",
            "llm.model=fake",
        ],
    )
    stage = make_llm_stage(cfg, make_backend(cfg.llm, None))
    try:
        stage(pa.table({"id": ["r1"], "sentence": ["A man is playing a guitar."]}))
    finally:
        stage.close()
    bodies = list(server.state.last_body.values())
    assert bodies and all(body.get("stop") == stop for body in bodies)
