"""The review app is part of the package: ``er-eval app`` starts it, the library never
imports Streamlit, and an installed wheel (no source tree, its dependencies resolved by
pip) serves it and writes the report."""

from __future__ import annotations

import ast
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from _helpers import free_port

import er_evaluation
from er_evaluation.app import launch

PACKAGE = Path(er_evaluation.__file__).resolve().parent
APP = PACKAGE / "app"
REPO = PACKAGE.parent


def _imports(path: Path) -> set[str]:
    """Every module name ``path`` imports, wherever the import statement sits."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


@pytest.mark.slow
def test_only_the_app_imports_streamlit():
    outside = [p for p in PACKAGE.rglob("*.py") if APP not in p.parents]
    assert len(outside) > 50
    offenders = {}
    for path in outside:
        bad = {
            name
            for name in _imports(path)
            if name.split(".")[0] == "streamlit"
            or (name.startswith("er_evaluation.app") and name != "er_evaluation.app.launch")
            and name != "er_evaluation.app"
        }
        if bad:
            offenders[str(path.relative_to(REPO))] = sorted(bad)
    assert not offenders, offenders
    # the launcher, the one app module the CLI imports, runs no Streamlit in this process
    assert not {n for n in _imports(APP / "launch.py") if n.split(".")[0] == "streamlit"}
    assert "streamlit" in {n.split(".")[0] for n in _imports(APP / "app_common.py")}


@pytest.mark.slow
def test_importing_every_library_module_loads_no_streamlit():
    code = (
        "import importlib, pkgutil, sys, er_evaluation\n"
        "for m in pkgutil.walk_packages(er_evaluation.__path__, 'er_evaluation.'):\n"
        "    app_page = m.name.startswith('er_evaluation.app.') and m.name != 'er_evaluation.app.launch'\n"
        "    if not app_page and not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "import er_evaluation.cli.app\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] == 'streamlit'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"


def test_help_text(capsys):
    from er_evaluation.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["app", "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "er-eval app [PROJECT_DIR] [--port N] [--host 127.0.0.1]" in text
    assert "``" not in text and ":func:" not in text


def test_a_missing_app_extra_is_one_line(cli, monkeypatch):
    monkeypatch.setattr(launch, "missing_packages", lambda: ["streamlit", "plotly"])
    code, out, err = cli(["app"])
    assert code == 1 and out == ""
    assert err == (
        "er-eval app: error: the review app needs the 'app' extra (streamlit, plotly not "
        'installed): pip install "er_evaluation_toolkit[app]"\n'
    )


def test_a_busy_port_and_a_file_are_refused(cli, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, _, err = cli(["app", tmp_path, "--port", port])
    assert code == 1
    assert (
        err == f"er-eval app: error: --port {port} is already in use on 127.0.0.1; choose another\n"
    )
    (tmp_path / "notes.txt").write_text("x")
    code, _, err = cli(["app", tmp_path / "notes.txt"])
    assert code == 1 and "is a file, not a folder" in err and err.count("\n") == 1
    code, _, err = cli(["app", tmp_path, "--port", "0"])
    assert code == 1 and "--port must be between 1 and 65535, got 0" in err


def test_the_command_line_binds_to_localhost_and_hides_deploy():
    command = launch.streamlit_command(port=8123)
    options = dict(zip(command[5::2], command[6::2], strict=True))
    assert command[4] == str(launch.ENTRY)
    assert options["--server.address"] == "127.0.0.1"
    assert options["--server.port"] == "8123"
    assert options["--client.toolbarMode"] == "viewer"  # no "Deploy" button
    assert options["--browser.gatherUsageStats"] == "false"


def test_the_server_opens_the_launch_project_before_a_page_asks(tmp_path, monkeypatch):
    from er_evaluation.app import app_common, server
    from er_evaluation.review._data import DEMO_SOURCE

    assert launch.streamlit_command()[1:3] == ["-m", "er_evaluation.app.server"]
    loaded = []
    monkeypatch.setattr(app_common, "cached_data", loaded.append)
    monkeypatch.setenv(launch.PROJECT_ENV, str(tmp_path / "new"))
    server.warm_up(timeout=0)
    # a folder without a project opens on the bundled data, as the first page opens it
    assert loaded == [DEMO_SOURCE] and (tmp_path / "new").is_dir()
    (tmp_path / "notes.txt").write_text("x")
    monkeypatch.setenv(launch.PROJECT_ENV, str(tmp_path / "notes.txt"))
    server.warm_up(timeout=0)  # cannot be opened: left for the page to report
    assert loaded == [DEMO_SOURCE]


def _non_loopback_address() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent for a UDP connect
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


def _run_er_eval_app(argv: list[str], env: dict | None = None, cwd=None) -> tuple:
    """``er-eval app ...`` in its own process; returns it and the URL it printed. The
    process gets the default SIGINT disposition: a test run started in the background by a
    shell without job control inherits SIGINT ignored, and Ctrl-C is what these tests send."""
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    line = proc.stdout.readline()  # the URL, printed once the server answers
    if not line:
        proc.wait(30)
        raise AssertionError(proc.stderr.read()[-3000:])
    return proc, line


@pytest.mark.slow
def test_er_eval_app_serves_on_localhost_and_stops_on_ctrl_c(tmp_path):
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    argv = [sys.executable, "-m", "er_evaluation", "app", str(tmp_path / "p"), "--port", str(port)]
    proc, line = _run_er_eval_app(argv, env)
    try:
        assert line == f"er-eval app: open http://127.0.0.1:{port} (Ctrl-C stops it)\n"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=10) as r:
            assert r.read() == b"ok"
        other = _non_loopback_address()
        if other is not None:  # bound to 127.0.0.1 only: another address of this host refuses
            with pytest.raises(OSError), socket.create_connection((other, port), timeout=5):
                pass
        proc.send_signal(signal.SIGINT)
        # the server may take up to 15 s before it is killed, and in a fresh environment
        # (CI's first tests) shutting down imports modules not yet compiled
        assert proc.wait(120) == 0
        assert "er-eval app: stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(0.5)
    assert not launch.port_in_use("127.0.0.1", port)  # the server went with it


@pytest.mark.slow
def test_the_wheel_serves_the_app_and_the_report_without_the_source_tree(tmp_path):
    """Build the wheel from a copy of the sources, install it with its ``app`` extra into a
    fresh virtual environment (pip resolves the declared dependencies from the package
    index, so an undeclared one fails here), and from outside any source tree: run
    ``er-eval app --help``, start the app and fetch its health endpoint, run the app's
    first page (bundled data, a drawn queue) with Streamlit's AppTest, and write
    ``er-eval report --demo`` (one HTML file, figures drawn by the embedded plotly)."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(PACKAGE, source / "er_evaluation", ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(wheels), str(source)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("*.whl")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    where = tmp_path / "elsewhere"
    where.mkdir()
    installed = subprocess.run(
        [python, "-m", "pip", "install", "-q", f"{wheel}[app]"],
        capture_output=True, text=True, timeout=1800, env=env, cwd=where,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    located = subprocess.run(
        [python, "-c", "import er_evaluation.app.launch as l; print(l.ENTRY)"],
        capture_output=True, text=True, env=env, cwd=where, check=True,
    ).stdout.strip()  # fmt: skip
    assert located.startswith(site), located
    er_eval = venv / "bin" / "er-eval"
    helped = subprocess.run(
        [er_eval, "app", "--help"], capture_output=True, text=True, env=env, cwd=where
    )
    assert helped.returncode == 0 and "er-eval app [PROJECT_DIR]" in helped.stdout

    port = free_port()
    proc, line = _run_er_eval_app(
        [str(er_eval), "app", str(tmp_path / "p"), "--port", str(port)], env, cwd=where
    )
    try:
        assert f"http://127.0.0.1:{port}" in line
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=10) as r:
            assert r.read() == b"ok"
    finally:
        proc.send_signal(signal.SIGINT)
        try:  # a fresh environment has no compiled modules yet: shutting down may take long
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    first_page = (
        "from streamlit.testing.v1 import AppTest\n"
        "from er_evaluation.app.launch import ENTRY\n"
        "at = AppTest.from_file(str(ENTRY), default_timeout=300).run()\n"
        "assert not at.exception, [e.value for e in at.exception]\n"
        "print(at.subheader[0].value)\n"
    )
    env["ER_EVAL_PROJECT_DIR"] = str(tmp_path / "apptest")
    page = subprocess.run(
        [python, "-c", first_page], capture_output=True, text=True, env=env, cwd=where,
        timeout=600,
    )  # fmt: skip
    assert page.returncode == 0, page.stderr[-3000:]
    assert page.stdout.startswith("Item 1 of 50: "), page.stdout

    reported = subprocess.run(
        [er_eval, "report", "--demo", "-o", "report.html"],
        capture_output=True, text=True, env=env, cwd=where, timeout=900,
    )  # fmt: skip
    assert reported.returncode == 0, reported.stderr[-3000:]
    html = (where / "report.html").read_text(encoding="utf-8")
    assert html.count('class="plotly-graph-div"') >= 3
    assert "<script src=" not in html and '<script type="text/javascript" src=' not in html
