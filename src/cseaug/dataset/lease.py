"""The lease a build holds on the version prefix it uploads to an object store.

The build rewrites ``.lease`` every :data:`RENEW_EVERY`; it runs out :data:`LEASE_TTL` after
its last renewal, by the store's clock (docs/dataset-contract.md, "Object storage").

Example:
    >>> from cseaug.dataset.store import Store
    >>> store = Store.from_root("memory://lease-demo")
    >>> with Lease(store, "datasets/demo/v0001", "token") as lease:
    ...     lease.check()
    >>> store.exists("datasets/demo/v0001/.lease")
    True
"""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

from cseaug.dataset.store import Store
from cseaug.dataset.versions import LEASE_FILE
from cseaug.errors import InputError

LEASE_TTL = timedelta(minutes=5)
RENEW_EVERY = timedelta(seconds=30)
SAFETY_MARGIN = timedelta(seconds=30)
"""The committer refuses once its last renewal is older than ``LEASE_TTL - SAFETY_MARGIN``."""


class Lease:
    """A build's lease on its claimed ``prefix``, written on entry and renewed until the
    ``with`` block ends; ``token`` is the build's claim token."""

    def __init__(self, store: Store, prefix: str, token: str) -> None:
        self.store, self.prefix, self.token = store, prefix, token
        self._renewed = 0.0
        self._failure: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="cseaug-lease", daemon=True)

    def __enter__(self) -> Lease:
        self.renew()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def renew(self) -> None:
        """Rewrite ``.lease`` (its last-modified time is the renewal)."""
        started = time.monotonic()
        body = {"token": self.token, "ttl_seconds": LEASE_TTL.total_seconds()}
        self.store.put(f"{self.prefix}/{LEASE_FILE}", json.dumps(body).encode())
        self._renewed = started

    def _keep(self) -> None:
        while not self._stop.wait(RENEW_EVERY.total_seconds()):
            try:
                self.renew()
            except Exception as exc:  # reported by check(), the committer's last look
                self._failure = exc

    def check(self) -> None:
        """Raise InputError unless the lease has held without a gap until now."""
        held = timedelta(seconds=time.monotonic() - self._renewed)
        if held > LEASE_TTL - SAFETY_MARGIN:
            why = f"its last renewal is {held.total_seconds():.0f} s old"
            if self._failure is not None:
                why += f" ({self._failure})"
            raise InputError(
                f"{self.store.url(self.prefix)}: this build's lease ran out ({why}), so a "
                "pruner may have emptied the prefix; this build published nothing: run it again"
            )
