"""The review app's server process: Streamlit's ``run`` command, with the app's modules
imported and the launch project's data loaded in a background thread meanwhile.

Under a plain ``streamlit run`` the first page view imports the app's modules (pandas, the
library) and loads the project's data (for the bundled PatentsView data, 133,541 mentions
and 15 versions) before it can show anything: the first reviewer waits for both
(benchmarks/bench_app_start.py). Here they start as soon as the server runs, while the
browser loads the page; a page that asks for the data earlier waits for the same cached
load instead of starting another. Started by :func:`launch.streamlit_command`.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

from streamlit.runtime import Runtime, RuntimeState
from streamlit.web import cli

WARM_THREAD = "er-eval-warm-up"


class _FromOtherThreads(logging.Filter):
    """Drops Streamlit's "missing ScriptRunContext" warnings of the warm-up thread, which
    runs outside any page view on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return threading.current_thread().name != WARM_THREAD


def warm_up(timeout: float = 60.0) -> None:
    """Once the server runs, import the app's modules and load the launch project's data
    into the process's cache. Waiting for the server first keeps its start (and the health
    check the launcher waits for) as quick as without this thread: the two would only
    take turns on the interpreter lock."""
    deadline = time.monotonic() + timeout
    while not _serving() and time.monotonic() < deadline:
        time.sleep(0.05)
    # imported here, by this thread once the server runs: at module level it would delay the start
    from er_evaluation.app import app_common

    app_common.warm_data()


def _serving() -> bool:
    return Runtime.exists() and Runtime.instance().state in (
        RuntimeState.NO_SESSIONS_CONNECTED,
        RuntimeState.ONE_OR_MORE_SESSIONS_CONNECTED,
    )


def main() -> None:
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(
        _FromOtherThreads()
    )
    threading.Thread(target=warm_up, name=WARM_THREAD, daemon=True).start()
    sys.exit(cli.main(prog_name="streamlit"))


if __name__ == "__main__":
    main()
