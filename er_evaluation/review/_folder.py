"""A review project folder on disk: its layout, its settings file, and the input files
copied into it.

Layout::

    project.json      settings: data source and columns, reviewers, the sample design
    inputs/           copies of uploaded input files (never overwritten: each upload gets
                      a new name, so a saved project's files stay as they were)
    queue.parquet     the records to review (see ``_design``)
    reviews.sqlite    the review store (see ``_store``)
    drafts.sqlite     reviewers' unsaved edits (see ``_drafts``)
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from er_evaluation.io import chmod_like_new_file, write_json_atomic
from er_evaluation.review._model import ReviewError

CONFIG_NAME = "project.json"
STORE_NAME = "reviews.sqlite"
DRAFTS_NAME = "drafts.sqlite"
QUEUE_NAME = "queue.parquet"
INPUTS = "inputs"


def check_folder(text: str | os.PathLike, *, base: Path | None = None) -> Path:
    """The absolute project folder named by ``text`` (``~`` expanded, relative paths taken
    from ``base``, default the current directory), or a :class:`ReviewError` in one
    sentence when it is a file, or cannot be created or written to. Nothing is created."""
    raw = str(text).strip()
    if not raw:
        raise ReviewError("give a project folder")
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    path = Path(os.path.abspath(path))
    if path.exists() and not path.is_dir():
        raise ReviewError(f"{path} is a file, not a folder: choose a folder for the project")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ReviewError(f"{existing} is a file, so {path} cannot be created")
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "is not writable" if existing == path else f"cannot be created in {existing}"
        raise ReviewError(f"{path} {what}: choose a folder you can write to")
    return path


def is_project(folder: Path) -> bool:
    """Does ``folder`` hold a project (settings, queue or review store)?"""
    return any((folder / name).exists() for name in (CONFIG_NAME, QUEUE_NAME, STORE_NAME))


def read_config(folder: Path) -> dict | None:
    """The project's settings file as JSON, or None when the folder has none."""
    path = folder / CONFIG_NAME
    if not path.exists():
        return None
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ReviewError(f"{path}: cannot read the project settings: {err}") from err
    if not isinstance(config, dict):
        raise ReviewError(f"{path}: the project settings must be a JSON object")
    return config


def write_config(config: dict, folder: Path) -> Path:
    """Write the project settings atomically (temp file, fsync, rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CONFIG_NAME
    return write_json_atomic(config, path, indent=2, sort_keys=True)


def keep_input(data: bytes, name: str, folder: Path) -> Path:
    """Write an uploaded file's bytes under ``folder/inputs`` with a name no other file
    has (``name``, else ``stem-2.ext``, …), so saving never replaces an input a saved
    project still reads. Returns the absolute path."""
    inputs = folder / INPUTS
    inputs.mkdir(parents=True, exist_ok=True)
    name = Path(name).name or "upload"
    stem, suffix = name.split(".", 1)[0], name[len(name.split(".", 1)[0]) :]
    candidate = inputs / name
    k = 1
    while candidate.exists():
        k += 1
        candidate = inputs / f"{stem}-{k}{suffix}"
    fd, tmp = tempfile.mkstemp(dir=inputs, prefix=f".{candidate.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        chmod_like_new_file(tmp)
        os.link(tmp, candidate)  # fails instead of replacing if the name was taken meanwhile
    finally:
        Path(tmp).unlink(missing_ok=True)
    return candidate.resolve()
