"""Progress bars for long work: one tqdm bar per stage or chunk, never per record.

A bar is drawn on stderr only when stderr is a terminal and
bars are not switched off: ``er-eval --quiet`` and the machine-readable outputs of the
command line switch them off with :func:`enabled`, a library user with
``ER_EVAL_PROGRESS=0`` or a call's own ``progress=False``. A bar that finished is
erased (``leave=False``), so what stays on the screen is the command's output.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator

from tqdm import tqdm

_state = {"on": True}


def _terminal() -> bool:
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def is_on() -> bool:
    """Whether bars may be drawn (a terminal is still needed)."""
    return _state["on"] and os.environ.get("ER_EVAL_PROGRESS", "1") != "0"


@contextlib.contextmanager
def enabled(flag: bool) -> Iterator[None]:
    """Bars on (``flag``) or off for the duration of the block."""
    before = _state["on"]
    _state["on"] = bool(flag)
    try:
        yield
    finally:
        _state["on"] = before


def progress(
    iterable: Iterable | None = None,
    desc: str = "",
    *,
    total: int | None = None,
    unit: str = "step",
    initial: int = 0,
    show: bool = True,
) -> tqdm:
    """A tqdm bar over ``iterable`` (or a manual one of ``total`` steps: ``.update()``),
    labelled ``desc``, on stderr, drawn only on a terminal while bars are on and
    ``show``."""
    return tqdm(
        iterable,
        desc=desc,
        total=total,
        unit=unit,
        initial=initial,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
        disable=not (show and is_on() and _terminal()),
    )


@contextlib.contextmanager
def stage(desc: str, *, show: bool = True) -> Iterator[None]:
    """One step of long work shown as a bar of one step (its label and elapsed time),
    for a call that cannot report its own progress (a file read, a DuckDB query)."""
    bar = progress(desc=desc, total=1, show=show)
    try:
        yield
        bar.update()
    finally:
        bar.close()
