"""One Prefect test harness (a temporary server and database) for every flow test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """Prefect's test harness; starting it takes ~20 s, so the whole session shares it."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield
