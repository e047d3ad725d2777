"""The Hugging Face hub: reachable or not, decided once per process (offline, the libraries
retry every file, ~47 s), and whether a model can be had without it.

Example:
    >>> env = {"HF_HUB_OFFLINE": "1"}
    >>> go_offline_unless_reachable(env) is None, hub_offline(env)
    (True, True)
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, MutableMapping
from pathlib import Path

OFFLINE_VARIABLES: tuple[str, ...] = (
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "HF_DATASETS_OFFLINE",
)
"""What the Hugging Face libraries read to make no request at all."""

DEFAULT_ENDPOINT = "https://huggingface.co"
PROBE_TIMEOUT_S = 2.0


def hub_offline(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``HF_HUB_OFFLINE`` asks for no hub requests."""
    return environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def hub_endpoint(environ: Mapping[str, str] = os.environ) -> str:
    """The hub's base URL: ``HF_ENDPOINT`` (a mirror) or huggingface.co."""
    return (environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def unreachable_reason(endpoint: str) -> str | None:
    """Why ``endpoint`` gave no answer within :data:`PROBE_TIMEOUT_S`, or None when it answered
    (any HTTP status is an answer). Proxies of the environment are honoured, as the libraries do."""
    request = urllib.request.Request(endpoint + "/api/models?limit=1", method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S):
            return None
    except urllib.error.HTTPError:
        return None
    except OSError as exc:  # urllib.error.URLError among them
        reason = getattr(exc, "reason", exc)
        return str(reason) or type(exc).__name__


def go_offline_unless_reachable(
    environ: MutableMapping[str, str] = os.environ,
    probe: Callable[[str], str | None] = unreachable_reason,
) -> str | None:
    """Probe the hub unless ``HF_HUB_OFFLINE`` is set; unreachable, set the offline variables in
    ``environ`` and return the message to print once (else None)."""
    if hub_offline(environ):
        return None
    endpoint = hub_endpoint(environ)
    reason = probe(endpoint)
    if reason is None:
        return None
    for name in OFFLINE_VARIABLES:
        environ[name] = "1"
    return (
        f"the Hugging Face hub ({endpoint}) is unreachable ({reason}): working offline "
        "(HF_HUB_OFFLINE=1); models must be local directories or in the Hugging Face cache"
    )


def is_local_name(name: str) -> bool:
    """Whether ``name`` means a local path rather than a hub id (``org/model`` or ``model``).

    Example:
        >>> [is_local_name(n) for n in ("facebook/wmt19-en-de", "gpt2", "./m", "storage/models/x/best")]
        [False, False, True, True]
    """
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or Path(name).exists()


def cached_file(
    name: str, filename: str = "config.json", revision: str | None = None
) -> str | None:
    """The path of ``filename`` of hub model ``name`` (at ``revision``; None: its main branch)
    in the local Hugging Face cache (``HF_HUB_CACHE`` as set now), or None."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # without huggingface_hub nothing can have been cached
        return None
    found = try_to_load_from_cache(
        name, filename, cache_dir=os.environ.get("HF_HUB_CACHE"), revision=revision
    )
    return found if isinstance(found, str) else None


def model_problem(
    name: str, setting: str, environ: MutableMapping[str, str] = os.environ
) -> str | None:
    """Why the model ``name`` (configured at ``setting``) cannot be had, or None: a local path
    must exist, a hub id be in the local cache when the hub is offline.

    Example:
        >>> model_problem("./no/such/model", "llm.model")
        "llm.model: no model directory './no/such/model'"
    """
    if is_local_name(name):
        return (
            None if Path(name).expanduser().exists() else f"{setting}: no model directory {name!r}"
        )
    if not hub_offline(environ) or cached_file(name) is not None:
        return None
    return (
        f"{setting}: {name!r} is not in the local Hugging Face cache and the hub is offline; "
        f"download it where the hub is reachable (`hf download {name}`, then copy "
        f"~/.cache/huggingface), or set {setting} to a local model directory"
    )
