"""Progress bars: drawn on stderr when it is a terminal (a pseudo-terminal here), never
when it is not, never with --quiet, never beside CSV or JSON on stdout; one bar per
stage or chunk."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
BAR = "exact metrics"  # the label of the bar of er_evaluation.evaluate


def _on_terminal(argv: list[str], *, cwd: Path, stdout_tty: bool = True) -> tuple[int, str, str]:
    """Run ``er-eval argv`` with stderr (and stdout, if ``stdout_tty``) on a
    pseudo-terminal; returns (exit code, what reached the terminal, stdout if piped)."""
    main, secondary = pty.openpty()
    # a terminal of 30 rows and 120 columns (a fresh pseudo-terminal has no size)
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "ER_EVAL_PROGRESS"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(
        [sys.executable, "-m", "er_evaluation", *argv],
        stdout=secondary if stdout_tty else subprocess.PIPE,
        stderr=secondary,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
    )
    os.close(secondary)
    chunks = []
    while True:
        ready, _, _ = select.select([main], [], [], 1.0)
        if ready:
            try:
                data = os.read(main, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    piped = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(60)
    os.close(main)
    return code, b"".join(chunks).decode(errors="replace"), piped


def _clusterings(folder: Path, n: int, seed: int = 0) -> tuple[Path, Path]:
    """A reference of ``n`` records in clusters of about 4 and a prediction with a tenth
    of them moved to a random cluster, as Parquet files of integer ids."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64)
    truth = rng.integers(0, n // 4, size=n)
    prediction = truth.copy()
    moved = rng.random(n) < 0.1
    prediction[moved] = rng.integers(0, n // 4, size=int(moved.sum()))
    paths = folder / "prediction.parquet", folder / "reference.parquet"
    for path, values in zip(paths, (prediction, truth), strict=True):
        pd.DataFrame({"record_id": ids, "cluster_id": values}).to_parquet(path, index=False)
    return paths


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    folder = tmp_path_factory.mktemp("small")
    return folder, _clusterings(folder, 2_000)


@pytest.mark.slow
def test_a_bar_on_a_terminal(small):
    folder, (prediction, reference) = small
    code, screen, _ = _on_terminal(["metrics", str(prediction), str(reference)], cwd=folder)
    assert code == 0, screen
    assert BAR in screen and f"reading {prediction}" in screen
    assert "pairwise_precision" in screen  # the table itself, after the bars were erased


@pytest.mark.slow
def test_no_bar_with_quiet_anywhere_on_the_line(small):
    folder, (prediction, reference) = small
    for argv in (
        ["metrics", str(prediction), str(reference), "--quiet"],
        ["--quiet", "metrics", str(prediction), str(reference)],
    ):
        code, screen, _ = _on_terminal(argv, cwd=folder)
        assert code == 0, screen
        assert (
            BAR not in screen
            and "reading" not in screen
            and "\r" not in screen.replace("\r\n", "\n")
        )


@pytest.mark.slow
def test_no_bar_in_csv_or_json_output(small):
    folder, (prediction, reference) = small
    for fmt in ("csv", "json"):
        code, screen, _ = _on_terminal(
            ["metrics", str(prediction), str(reference), "--format", fmt], cwd=folder
        )
        assert code == 0, screen
        assert BAR not in screen and "reading" not in screen
    # stdout piped to a file, stderr on the terminal: the CSV is clean
    code, screen, piped = _on_terminal(
        ["metrics", str(prediction), str(reference), "--format", "csv"],
        cwd=folder,
        stdout_tty=False,
    )
    assert code == 0 and piped.startswith("prediction,") and BAR not in piped
    assert all(
        len(line.split(",")) == len(piped.splitlines()[0].split(",")) for line in piped.splitlines()
    )


@pytest.mark.slow
def test_no_bar_off_a_terminal(small):
    folder, (prediction, reference) = small
    done = subprocess.run(
        [sys.executable, "-m", "er_evaluation", "metrics", str(prediction), str(reference)],
        capture_output=True, text=True, cwd=folder, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert BAR not in done.stderr and "reading" not in done.stderr


def test_library_bars_follow_the_switch(capsys):
    """In the library: bars off with ER_EVAL_PROGRESS=0 or inside ``enabled(False)``."""
    from er_evaluation import _progress

    assert _progress.is_on()
    with _progress.enabled(False):
        assert not _progress.is_on()
        assert _progress.progress(range(3), "x").disable
    assert _progress.is_on()
    os.environ["ER_EVAL_PROGRESS"] = "0"
    try:
        assert not _progress.is_on()
    finally:
        del os.environ["ER_EVAL_PROGRESS"]


@pytest.mark.slow
def test_a_bar_for_metrics_on_5m_records(tmp_path):
    prediction, reference = _clusterings(tmp_path, 5_000_000)
    code, screen, _ = _on_terminal(["metrics", str(prediction), str(reference)], cwd=tmp_path)
    assert code == 0, screen[-3000:]
    assert f"reading {prediction}" in screen and f"reading {reference}" in screen
    assert BAR in screen
    assert "pairwise_precision" in screen
