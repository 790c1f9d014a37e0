"""Review app: the time from opening a freshly started app to the first review item.

    python benchmarks/bench_app_start.py [--repeats 3] [--boost] [--chromium /usr/bin/chromium]
    python benchmarks/bench_app_start.py --smoke      # one start

Each repeat starts a new app server exactly as ``er-eval app`` does
(:func:`er_evaluation.app.launch.start`) on an empty project folder, so the bundled
PatentsView data (133,541 mentions, 15 versions) is loaded and the default sample drawn
on the first page view, and measures, in headless Debian chromium, the seconds from
opening the page to the first review item being shown (the target). Beside it: the
seconds from the start of the command to the server answering its health check, and a
second page opened on the same server (the per-process work, imports and the cached
data, already done): the difference between the first and the second view is what the
server does once. The server's CPU seconds (all its threads, from /proc) up to each of
the three moments say where its work goes whatever the machine's load; ``--boost`` (root)
raises the priority of the server and the browser on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import _timing  # noqa: E402

from er_evaluation.app import launch  # noqa: E402

CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _first_item(browser, port: int) -> float:
    """Seconds from opening the app's page in a new tab to its first review item."""
    page = browser.new_page(viewport={"width": 1280, "height": 1300})
    started = time.monotonic()
    page.goto(f"http://127.0.0.1:{port}/")
    page.get_by_text(re.compile(r"Item 1 of 50: ")).wait_for(timeout=300_000)
    seconds = time.monotonic() - started
    page.close()
    return seconds


def first_item_seconds(chromium: str) -> tuple[tuple[float, float, float], tuple[float, ...]]:
    """Seconds to a freshly started app's health check, from opening its page to its
    first review item, and the same for a second page on the same server; and the
    server's CPU seconds at each of these three moments."""
    from playwright.sync_api import sync_playwright

    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        started = time.monotonic()
        proc = launch.start(Path(tmp) / "project", port=port)
        try:
            healthy = time.monotonic() - started
            cpu = [_timing.process_cpu(proc.pid)]
            first = _first_item(browser, port)
            cpu.append(_timing.process_cpu(proc.pid))
            second = _first_item(browser, port)
            cpu.append(_timing.process_cpu(proc.pid))
        finally:
            proc.terminate()
            proc.wait(30)
            browser.close()
    return (healthy, first, second), tuple(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--smoke", action="store_true", help="one start")
    parser.add_argument("--boost", action="store_true", help="raised CPU priority (root)")
    args = parser.parse_args()
    if args.boost:
        _timing.raise_priority()
    repeats = 1 if args.smoke else args.repeats
    loads = [os.getloadavg()[0]]
    times = []
    for _ in range(repeats):
        times.append(first_item_seconds(args.chromium))
        loads.append(os.getloadavg()[0])
    for label, column in (
        ("server answering its health check after", 0),
        ("first review item shown after (target 5 s)", 1),
        ("on a second page of the same server", 2),
    ):
        print(f"{label} " + ", ".join(f"{t[column]:.1f}" for t, _ in times) + " s")
    for label, (a, b) in (
        ("server CPU to its health check", (None, 0)),
        ("server CPU for the first view", (0, 1)),
        ("server CPU for the second view", (1, 2)),
    ):
        spent = [cpu[b] - (0.0 if a is None else cpu[a]) for _, cpu in times]
        print(f"{label}: " + ", ".join(f"{c:.2f}" for c in spent) + " s")
    print(f"load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
