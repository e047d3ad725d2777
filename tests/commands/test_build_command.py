"""``cseaug build``'s own checks, before any flow starts."""

from __future__ import annotations

import pytest

from cseaug.commands.build import refuse_secrets_in_overrides
from cseaug.errors import ConfigError


def test_an_override_holding_a_secret_is_refused_by_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Overrides become the flow run's parameters, stored by Prefect: a secret pasted into one
    is refused, and the message names the key, never the value."""
    key = "sk-test-SECRET-1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    refuse_secrets_in_overrides(["sample.size=500", "llm.model=gpt-4o-mini"])
    with pytest.raises(ConfigError, match=r"--set description=\.\.\.") as caught:
        refuse_secrets_in_overrides(["sample.size=500", f"description=built with {key}"])
    assert key not in str(caught.value) and "environment variable" in str(caught.value)
