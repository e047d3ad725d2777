"""The ``cseaug`` command line (typer; the commands live in :mod:`cseaug.commands`), which
switches Prefect's telemetry off before any command runs (docs/security.md)."""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

import typer
from rich.console import Console

from cseaug.commands import build, data, datasets, diagnostics, osscse, train, vaegpt
from cseaug.commands.help_screens import use_plain_flags
from cseaug.commands.quiet_logs import expected_failure
from cseaug.commands.stopping import install_stop_handlers, print_traceback
from cseaug.errors import CseaugError, os_error_message
from cseaug.secrets import install_log_scrubbing, scrub

app = typer.Typer(
    name="cseaug",
    help="Build contrastive sentence-embedding training data (NGCSE, SKICSE, OssCSE, VAEGPT-Sim). "
    "Add --debug to any command to see the traceback of an error.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# each module's commands, in the order the help lists them (``data`` is a group of its own)
for commands in (build, datasets, diagnostics, osscse, train, vaegpt, data):
    app.add_typer(commands.app)
use_plain_flags(app)

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

    Example:
        >>> env = {"DO_NOT_TRACK": "0"}
        >>> apply_prefect_defaults(env)
        >>> env["DO_NOT_TRACK"], env["PREFECT_SERVER_ANALYTICS_ENABLED"]
        ('0', 'false')
    """
    for name, value in PREFECT_DEFAULTS.items():
        if not environ.get(name):
            environ[name] = value


def take_debug_flag(argv: list[str]) -> bool:
    """Remove every ``--debug`` from ``argv``; True when there was one or ``CSEAUG_DEBUG`` is set.

    Example:
        >>> argv = ["cseaug", "build", "--debug", "-c", "x.yaml"]
        >>> take_debug_flag(argv), argv
        (True, ['cseaug', 'build', '-c', 'x.yaml'])
    """
    found = "--debug" in argv[1:]
    argv[1:] = [arg for arg in argv[1:] if arg != "--debug"]
    return found or os.environ.get("CSEAUG_DEBUG", "").lower() in ("1", "true", "yes")


def main() -> None:
    """The command line: an expected failure (a CseaugError, a full disk, ...) is one line,
    scrubbed of secrets, and exit status 2; anything else (or with ``--debug``, anything)
    prints its traceback; an unexpected failure exits 1."""
    debug = take_debug_flag(sys.argv)
    if debug:
        os.environ["CSEAUG_DEBUG"] = "1"  # what a flow's quiet logging reads (commands/build.py)
    apply_prefect_defaults()
    install_log_scrubbing()
    console = Console(stderr=True)
    try:
        app()
    except Exception as exc:
        expected = expected_failure(exc)
        if debug or not expected:
            print_traceback(console)  # it helps, and is scrubbed like everything printed
        if not expected:
            sys.exit(1)
        message = str(exc) if isinstance(exc, CseaugError) else os_error_message(exc)  # type: ignore[arg-type]
        console.print(f"[bold red]error:[/] {scrub(message)}", highlight=False, soft_wrap=True)
        sys.exit(2)


def run() -> None:
    """The ``cseaug`` script: :func:`main`, with SIGINT and SIGTERM stopping the command
    (:mod:`cseaug.commands.stopping`)."""
    install_stop_handlers()
    main()
