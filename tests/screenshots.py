"""Take a screenshot of every page of the review app (for the README), in real chromium.

    python tests/screenshots.py [--out docs/screenshots] [--chromium /usr/bin/chromium]

    python tests/screenshots.py --time-first-item 3

Starts the app on the bundled PatentsView data in a temporary project folder, saves one
review and ticks a record in a second one so the pages show work in progress, and writes
``<page>.png`` (1280x1300 viewport) to ``--out``. Also prints the time from opening the
app to the first review item being shown.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from pathlib import Path

from _helpers import CHROMIUM_ARGS as ARGS
from _helpers import free_port
from _helpers import start_app as start


def settle(page, wait_ms: int = 1500) -> None:
    """Wait until the script run is over and every table on the page has been laid out (a
    canvas grid fills in late)."""
    page.wait_for_timeout(500)
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')")
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stDataFrameResizable]')]"
        ".every(e => e.getBoundingClientRect().width > 200)"
    )
    page.wait_for_timeout(wait_ms)


def shoot(out: Path, chromium: str) -> None:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = start(Path(tmp) / "project", port)
        url = f"http://127.0.0.1:{port}"
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 1300})
                page.set_default_timeout(int(os.environ.get("SHOT_TIMEOUT", "120000")))

                started = time.monotonic()
                page.goto(f"{url}/")
                page.get_by_text(re.compile(r"Item 1 of 50: ")).wait_for()
                print(f"first review item shown after {time.monotonic() - started:.1f} s")
                page.get_by_label("Reviewer", exact=True).fill("ann")
                page.get_by_label("Reviewer", exact=True).press("Enter")
                page.get_by_role("button", name="Correct as is").click()
                page.get_by_text(re.compile(r"Item 2 of 50: ")).wait_for()
                settle(page, 500)
                grid = page.locator("[data-testid='stDataFrameResizable']").first.bounding_box()
                page.mouse.click(grid["x"] + 70, grid["y"] + 35 + 35 * 2 + 17)
                settle(page)
                page.screenshot(path=out / "review.png")

                page.goto(f"{url}/project")
                page.get_by_text("Loaded").wait_for()
                settle(page)
                page.screenshot(path=out / "project.png")

                page.goto(f"{url}/sample")
                page.get_by_text("What will be reviewed").wait_for()
                settle(page)
                page.screenshot(path=out / "sample.png")

                page.goto(f"{url}/estimates")
                page.get_by_text("The project's existing benchmark").click()
                page.get_by_text("Paired difference between two versions").wait_for()
                page.locator(".js-plotly-plot").first.wait_for()
                settle(page, 2000)
                page.screenshot(path=out / "estimates.png")

                page.goto(f"{url}/compare")
                page.get_by_text("Clusters split or merged between two versions").wait_for()
                page.locator(".js-plotly-plot").nth(1).wait_for()
                settle(page, 2000)
                page.screenshot(path=out / "compare.png")
                page.locator(".js-plotly-plot").nth(1).scroll_into_view_if_needed()
                page.wait_for_timeout(1000)
                page.screenshot(path=out / "compare_agreement.png")

                page.goto(f"{url}/pairs")
                for label in ("Match", "Non-match", "Non-match"):
                    page.get_by_text(re.compile(r"Pair \d+: same person")).wait_for()
                    page.get_by_role("button", name=label, exact=True).click()
                    page.wait_for_timeout(1500)
                page.get_by_text("Running estimate").wait_for()
                settle(page)
                page.screenshot(path=out / "pairs.png")
                browser.close()
        finally:
            proc.terminate()
            proc.wait(30)


def time_first_item(chromium: str, repeats: int) -> list[float]:
    """Seconds from opening a freshly started app (new server, empty project) to the first
    review item being shown, measured ``repeats`` times."""
    from playwright.sync_api import sync_playwright

    times = []
    for _ in range(repeats):
        port = free_port()
        with tempfile.TemporaryDirectory() as tmp:
            proc = start(Path(tmp) / "project", port)
            try:
                with sync_playwright() as pw:
                    browser = pw.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
                    page = browser.new_page(viewport={"width": 1280, "height": 1300})
                    started = time.monotonic()
                    page.goto(f"http://127.0.0.1:{port}/")
                    page.get_by_text(re.compile(r"Item 1 of 50: ")).wait_for(timeout=120_000)
                    times.append(time.monotonic() - started)
                    browser.close()
            finally:
                proc.terminate()
                proc.wait(30)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument(
        "--time-first-item",
        type=int,
        metavar="N",
        help="only measure the time to the first review item on N fresh starts",
    )
    args = parser.parse_args()
    if args.time_first_item:
        times = time_first_item(args.chromium, args.time_first_item)
        print("first review item shown after " + ", ".join(f"{t:.1f}" for t in times) + " s")
        print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        return
    shoot(args.out, args.chromium)


if __name__ == "__main__":
    main()
