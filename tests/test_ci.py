"""The CI script (.ci/run) fails when the browser or Java cannot be installed, and waits
out a held package lock. Each test runs a copy of the script in its own folder, with
``apt-get`` (and ``java``) replaced by stand-ins on PATH: nothing is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "run"
LOCKED = "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242"


def _run(tmp_path: Path, apt_get: str, *args: str, chromium: Path) -> subprocess.CompletedProcess:
    """Run a copy of .ci/run with ``apt_get`` as the body of the stand-in apt-get."""
    (tmp_path / ".ci").mkdir()
    shutil.copy(SCRIPT, tmp_path / ".ci" / "run")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, body in {
        "apt-get": f'echo "$*" >> {tmp_path}/apt.log\n{apt_get}',
        "java": "echo 'openjdk version \"17.0.2\" 2022-01-18' >&2",
    }.items():
        (bin_ / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_ / name).chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_}:{os.environ['PATH']}",
        "ER_EVAL_CHROMIUM": str(chromium),
        "ER_EVAL_CI_APT_ATTEMPTS": "3",
        "ER_EVAL_CI_APT_WAIT": "0",
    }
    return subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_fails_when_chromium_cannot_be_installed(tmp_path):
    chromium = tmp_path / "no" / "chromium"
    done = _run(tmp_path, f'echo "{LOCKED}" >&2; exit 100', chromium=chromium)
    assert done.returncode == 1
    assert "ci: FAILED" in done.stderr and "chromium" in done.stderr.lower()
    assert not (tmp_path / ".venv").exists()  # stopped before installing anything else
    if os.geteuid() == 0:  # every try was made: the update step, three times
        assert (tmp_path / "apt.log").read_text().count("update") == 3


@pytest.mark.skipif(os.geteuid() != 0, reason="installs through apt-get only as root")
def test_waits_for_a_held_package_lock(tmp_path):
    chromium = tmp_path / "chromium"
    # the lock is held on the first try; then the "install" puts chromium in place
    apt_get = (
        f'[ $(wc -l < {tmp_path}/apt.log) -gt 1 ] || {{ echo "{LOCKED}" >&2; exit 100; }}\n'
        f'case "$*" in *install*) printf "#!/bin/sh\\n" > {chromium}; chmod +x {chromium};; esac'
    )
    done = _run(tmp_path, apt_get, "--system", chromium=chromium)
    assert done.returncode == 0, done.stderr
    assert "failed (try 1 of 3)" in done.stderr
    assert f"ci: chromium at {chromium}" in done.stdout
