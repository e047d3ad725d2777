"""The ``cseaug`` command line (typer). Commands live in :mod:`cseaug.commands`.

This is the top floor of the library: ``cseaug build`` and ``cseaug train-encoder`` start
their Prefect flows so that every run shows in Prefect. Errors of the
:class:`~cseaug.errors.CseaugError` family are printed as one clear message with exit
status 2, without a traceback.

Nothing leaves the machine unless the user asks: before any command runs (and so before
Prefect is imported), :func:`apply_prefect_defaults` switches Prefect's telemetry off and
gives its temporary server time to start, unless the user set those variables. Every log
record and every error message is scrubbed of secrets (:mod:`cseaug.secrets`).
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import MutableMapping

import typer
from rich.console import Console

from cseaug import wallclock
from cseaug.errors import CseaugError
from cseaug.secrets import install_log_scrubbing, scrub

COMMAND_MODULES: tuple[str, ...] = (
    "build",
    "data",
    "datasets",
    "diagnostics",
    "osscse",
    "train",
    "vaegpt",
)
"""Modules under :mod:`cseaug.commands` whose ``register(app)`` adds commands."""

app = typer.Typer(
    name="cseaug",
    help="Build contrastive sentence-embedding training data (NGCSE, SKICSE, OssCSE, VAEGPT-Sim).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

for _name in COMMAND_MODULES:
    importlib.import_module(f"cseaug.commands.{_name}").register(app)

PREFECT_DEFAULTS: dict[str, str] = {
    # Prefect's client telemetry (Amplitude) honours the DO_NOT_TRACK convention...
    "DO_NOT_TRACK": "1",
    # ...its server (the temporary one a build starts too) sends a heartbeat unless this is off.
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    # The temporary server's 20 s start timeout is too short on a small or busy machine.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
}
"""Environment the CLI gives Prefect unless the user set the variable (to opt in, e.g.
``DO_NOT_TRACK=0 PREFECT_SERVER_ANALYTICS_ENABLED=true``)."""


def apply_prefect_defaults(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set each of :data:`PREFECT_DEFAULTS` that is unset or empty in ``environ``.

    Prefect reads these when it is imported and when it starts its server, which inherits
    the environment: :func:`main` calls this before any command runs.

    Example:
        >>> env = {"DO_NOT_TRACK": "0"}
        >>> apply_prefect_defaults(env)
        >>> env["DO_NOT_TRACK"], env["PREFECT_SERVER_ANALYTICS_ENABLED"]
        ('0', 'false')
    """
    for name, value in PREFECT_DEFAULTS.items():
        if not environ.get(name):
            environ[name] = value


def main() -> None:
    """Entry point of the ``cseaug`` script."""
    wallclock.mark(wallclock.CLI_STARTED)
    apply_prefect_defaults()
    install_log_scrubbing()
    console = Console(stderr=True)
    try:
        app()
    except CseaugError as exc:
        console.print(f"[bold red]error:[/] {scrub(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except Exception:
        # Not one of ours: the traceback helps, and is scrubbed like everything printed.
        console.print(scrub(traceback.format_exc()), highlight=False, soft_wrap=True, markup=False)
        sys.exit(1)
