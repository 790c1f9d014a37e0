"""Start the app in a headless Streamlit server, for the browser test and the screenshots.

Not a page: a helper shared by the browser tests (through ``tests/_helpers.py``) and
``app/screenshots.py``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ENTRY = Path(__file__).resolve().parent / "er_eval_app.py"
# Debian chromium as root in a container; without the networking flags it keeps trying
# (and failing) to reach Google's hosts.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_app(project: Path, port: int, timeout: float = 90.0) -> subprocess.Popen:
    """Run ``streamlit run app/er_eval_app.py`` on 127.0.0.1:``port`` with ``project`` as the
    project folder and return the process once its health check answers ``ok``."""
    env = dict(os.environ, ER_EVAL_PROJECT_DIR=str(project))
    command = [
        sys.executable, "-m", "streamlit", "run", str(ENTRY),
        "--server.headless", "true",
        "--server.address", "127.0.0.1",
        "--server.port", str(port),
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    # a file, not a pipe: nobody drains a pipe while the server runs, and a full one blocks it
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"streamlit exited: {log.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    proc.wait(10)
    raise RuntimeError(f"streamlit did not answer its health check within {timeout:.0f} s")
