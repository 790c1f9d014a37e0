"""Review app: the time from opening a freshly started app to the first review item.

    python benchmarks/bench_app_start.py [--repeats 3] [--chromium /usr/bin/chromium]
    python benchmarks/bench_app_start.py --smoke      # one start

Each repeat starts a new app server exactly as ``er-eval app`` does
(:func:`er_evaluation.app.launch.start`) on an empty project folder, so the bundled
PatentsView data (133,541 mentions, 15 versions) is loaded and the default sample drawn
on the first page view, and measures, in headless Debian chromium, the seconds from
opening the page to the first review item being shown.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import tempfile
import time
from pathlib import Path

from er_evaluation.app import launch

CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def first_item_seconds(chromium: str) -> float:
    """Seconds from opening a freshly started app to its first review item."""
    from playwright.sync_api import sync_playwright

    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = launch.start(Path(tmp) / "project", port=port)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path=chromium, headless=True, args=CHROMIUM_ARGS
                )
                page = browser.new_page(viewport={"width": 1280, "height": 1300})
                started = time.monotonic()
                page.goto(f"http://127.0.0.1:{port}/")
                page.get_by_text(re.compile(r"Item 1 of 50: ")).wait_for(timeout=300_000)
                seconds = time.monotonic() - started
                browser.close()
        finally:
            proc.terminate()
            proc.wait(30)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--smoke", action="store_true", help="one start")
    args = parser.parse_args()
    repeats = 1 if args.smoke else args.repeats
    times = [first_item_seconds(args.chromium) for _ in range(repeats)]
    print("first review item shown after " + ", ".join(f"{t:.1f}" for t in times) + " s")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
