"""Starting the review app: the Streamlit command line, its environment, its health check.

Shared by ``er-eval app`` and the test suite's browser tests, so both start the app the
same way. Imports no Streamlit (the server runs in its own process).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "ENTRY",
    "PROJECT_ENV",
    "AppStartError",
    "app_url",
    "missing_packages",
    "port_in_use",
    "start",
    "streamlit_command",
]

ENTRY = Path(__file__).resolve().with_name("er_eval_app.py")
PROJECT_ENV = "ER_EVAL_PROJECT_DIR"  # the project folder the app opens on
DEFAULT_HOST = "127.0.0.1"  # reviews are not for the whole network unless asked
DEFAULT_PORT = 8501
REQUIRED = ("streamlit", "plotly")  # the `app` extra


class AppStartError(RuntimeError):
    """The app's server did not come up (it exited, or did not answer in time)."""


def missing_packages() -> list[str]:
    """The packages of the ``app`` extra that are not installed."""
    return [name for name in REQUIRED if importlib.util.find_spec(name) is None]


def port_in_use(host: str, port: int) -> bool:
    """Whether something already listens on ``host:port`` (a port left in TIME_WAIT by
    a stopped server is free: the server binds with SO_REUSEADDR, as this check does)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def app_url(host: str, port: int) -> str:
    """The address a browser on this machine opens (a wildcard host means localhost)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else ("[::1]" if host == "::" else host)
    return f"http://{shown}:{port}"


def streamlit_command(*, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> list[str]:
    """``streamlit run`` of the app's entry script (through :mod:`er_evaluation.app.server`,
    which loads the project's data while the server starts): headless (no browser opened),
    no usage statistics, no file watcher (an installed app does not change under its
    server), and the viewer toolbar (no "Deploy" button: a review app is not published
    from here)."""
    return [
        sys.executable, "-m", "er_evaluation.app.server", "run", str(ENTRY),
        "--server.headless", "true",
        "--server.address", host,
        "--server.port", str(port),
        "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false",
        "--client.toolbarMode", "viewer",
    ]  # fmt: skip


def start(
    project: Path | None,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    stderr: IO | int | None = None,
    timeout: float = 90.0,
    env: dict[str, str] | None = None,
) -> subprocess.Popen:
    """Start the app's server for ``project`` (``None``: the app's default folder) and
    return its process once ``/_stcore/health`` answers ``ok``. ``stderr`` receives the
    server's log (default: this process's stderr); ``env`` adds environment variables.
    Raises :class:`AppStartError` if the server exits or stays silent for ``timeout`` s."""
    environment = dict(os.environ, **(env or {}))
    if project is not None:
        environment[PROJECT_ENV] = str(Path(project).expanduser().absolute())
    proc = subprocess.Popen(
        streamlit_command(host=host, port=port),
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    try:
        _wait_healthy(proc, f"{app_url(host, port)}/_stcore/health", timeout)
    except BaseException:  # Ctrl-C while waiting included: no server is left behind
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)
        raise
    return proc


def _wait_healthy(proc: subprocess.Popen, health: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AppStartError(f"the app's server exited (status {proc.returncode})")
        try:
            with urllib.request.urlopen(health, timeout=2) as reply:
                if reply.read() == b"ok":
                    return
        except OSError:
            time.sleep(0.3)
    raise AppStartError(f"the app's server did not answer within {timeout:.0f} s")
