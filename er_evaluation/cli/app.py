"""``er-eval app``: start the review app on a project folder.

    er-eval app [PROJECT_DIR] [--port N] [--host 127.0.0.1]

Serves the Streamlit review app (installed with the ``app`` extra:
``pip install "er_evaluation_toolkit[app]"``) on ``http://HOST:PORT`` and prints that
address; Ctrl-C stops it. Without PROJECT_DIR the app opens on its demo project of the
bundled PatentsView data (``~/.er_evaluation/projects/demo``). The app is bound to
127.0.0.1 (this machine only) unless ``--host`` says otherwise: it has no login, so
anyone who can reach the address can read and change the project's reviews.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

from er_evaluation.app import launch
from er_evaluation.cli._common import (
    add_command,
)

PORT_SEARCH = 100  # without --port, the first free port from 8501 on


def register(subparsers) -> None:
    parser = add_command(
        subparsers, "app", __doc__, "start the review app (Streamlit) on a project folder"
    )
    parser.add_argument(
        "project",
        metavar="PROJECT_DIR",
        nargs="?",
        help="the review project folder (created if missing; default: the demo project)",
    )
    parser.add_argument(
        "--port",
        type=int,
        help=f"port to serve on (default: the first free one from {launch.DEFAULT_PORT})",
    )
    parser.add_argument(
        "--host",
        default=launch.DEFAULT_HOST,
        help="address to bind (default: %(default)s, this machine only; 0.0.0.0 for every "
        "network interface)",
    )
    parser.set_defaults(func=run)


def _port(host: str, port: int | None) -> int:
    if port is not None:
        if not 1 <= port <= 65535:
            raise ValueError(f"--port must be between 1 and 65535, got {port}")
        if launch.port_in_use(host, port):
            raise ValueError(f"--port {port} is already in use on {host}; choose another")
        return port
    for candidate in range(launch.DEFAULT_PORT, launch.DEFAULT_PORT + PORT_SEARCH):
        if not launch.port_in_use(host, candidate):
            return candidate
    raise ValueError(
        f"no free port on {host} between {launch.DEFAULT_PORT} and "
        f"{launch.DEFAULT_PORT + PORT_SEARCH - 1}; choose one with --port"
    )


def run(args: argparse.Namespace) -> int:
    missing = launch.missing_packages()
    if missing:
        raise ValueError(
            f"the review app needs the 'app' extra ({', '.join(missing)} not installed): "
            'pip install "er_evaluation_toolkit[app]"'
        )
    project = None
    if args.project is not None:
        project = Path(args.project).expanduser().absolute()
        if project.exists() and not project.is_dir():
            raise ValueError(f"PROJECT_DIR {project} is a file, not a folder")
    port = _port(args.host, args.port)
    where = project if project is not None else "the demo project"
    print(f"er-eval app: starting the review app on {where} ...", file=sys.stderr)
    try:
        server = launch.start(project, host=args.host, port=port)
    except launch.AppStartError as error:
        print(f"er-eval app: error: {error}", file=sys.stderr)
        return 1
    print(f"er-eval app: open {launch.app_url(args.host, port)} (Ctrl-C stops it)", flush=True)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"er-eval app: bound to {args.host}: anyone who can reach this machine on port "
            f"{port} can read and change the reviews (the app has no login)",
            file=sys.stderr,
        )

    def stop(signum, frame):
        raise KeyboardInterrupt

    # a terminal's Ctrl-C reaches the server too, but a SIGINT or SIGTERM sent to this
    # process alone does not: either way the server is stopped here, never left behind
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        return_code = server.wait()
    except KeyboardInterrupt:
        _stop(server)
        print("er-eval app: stopped", file=sys.stderr)
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(f"er-eval app: the server stopped (status {return_code})", file=sys.stderr)
    return 0 if return_code == 0 else 1


def _stop(server) -> None:
    server.send_signal(signal.SIGINT)
    try:
        server.wait(15)
    except (KeyboardInterrupt, subprocess.TimeoutExpired):
        server.kill()
        server.wait()
