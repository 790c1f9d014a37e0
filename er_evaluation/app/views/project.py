"""Project / data: the project folder, its reviewers, and the bundled demo or your own files.

Nothing saved is changed until "Check and save project" succeeds: uploads stay in the
browser session (read from temporary copies that are removed at once), the whole new
configuration is loaded and validated, and only then are the uploads copied into the
project's ``inputs/`` under fresh names (never over a file the saved project reads) and
the settings written.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import streamlit as st

from er_evaluation.app.app_common import (
    choose_project,
    launch_dir,
    open_project,
    plain_errors,
    project_dir,
)
from er_evaluation.clustering import cluster_sizes
from er_evaluation.io import read_table
from er_evaluation.review import (
    ClusteringFile,
    PredictionsSource,
    RecordsFile,
    ReviewError,
    check_folder,
    is_project,
)
from er_evaluation.review._data import UPLOAD, upload_columns

st.title("Project and data")

# ------------------------------------------------------------------ the folder

current = project_dir()
typed = st.text_input("Project folder", value=str(current), key="project_folder")
try:
    target = check_folder(typed)
except ReviewError as err:
    st.error(str(err))
    target = None
if target is not None and target != current:
    st.caption(f"Resolved: `{target}`")
    if target.is_dir() and is_project(target):
        if st.button("Open this project", key="open_folder"):
            choose_project(target)
            st.rerun()
    else:
        what = "an existing folder without a project" if target.is_dir() else "a new folder"
        st.info(f"`{target}` is {what}. Create a project there?")
        if st.button("Create the project here", key="create_folder"):
            with plain_errors("Could not create the project folder"):
                target.mkdir(parents=True, exist_ok=True)
            choose_project(target)
            st.rerun()
if not current.is_dir() and current == launch_dir():
    with plain_errors("Could not create the project folder"):
        current.mkdir(parents=True, exist_ok=True)
if not current.is_dir():
    st.info(f"`{current}` does not exist yet.")
    if st.button("Create it", key="create_current"):
        with plain_errors("Could not create the project folder"):
            current.mkdir(parents=True, exist_ok=True)
        st.rerun()
    st.stop()

project = open_project()

st.subheader("Reviewers")
st.caption(
    "Decisions are saved under one of these names, chosen in the sidebar (names ignore case: "
    "'Ann' and 'ann' are one reviewer)."
)
st.write(", ".join(project.reviewers) if project.reviewers else "No reviewers yet.")
new_names = st.text_input(
    "Add reviewers (comma-separated names)", key="add_reviewers", placeholder="ann, bob"
)
if st.button("Add", key="add_reviewers_go", disabled=not new_names.strip()):
    given = [n.strip() for n in new_names.split(",") if n.strip()]
    with plain_errors("Not added"):
        kept = project.add_reviewers(given)
    same = [f"{g} is {k}" for g, k in zip(given, kept, strict=True) if g != k]
    st.session_state["project_flash"] = (
        "Reviewers: "
        + ", ".join(project.reviewers)
        + (f" ({'; '.join(same)}: names ignore case)" if same else "")
    )
    st.rerun()
if st.session_state.get("project_flash"):
    st.success(st.session_state.pop("project_flash"))

st.subheader("Data")
saved_source = project.source
source = st.radio(
    "Data",
    ["Bundled PatentsView demo", "My own files"],
    index=0 if saved_source.demo else 1,
    key="source",
    horizontal=True,
)

uploads: dict[str, bytes] = {}  # this run's uploads, by the name their path stands for


def file_key(path: str) -> str:
    """Widget key suffix bound to a file (not to its row position)."""
    return hashlib.sha1(path.encode()).hexdigest()[:12]


def uploaded(upload, widget: str) -> str:
    """An upload kept in this session (the project is not touched): its ``upload:`` path."""
    name = f"{widget}/{upload.name}"
    uploads[name] = upload.getvalue()
    return f"{UPLOAD}{name}"


def pick_file(label: str, key: str, current: str | None) -> str | None:
    """A file either uploaded (kept in the session until the project is saved) or given by
    path."""
    upload = st.file_uploader(label, type=["csv", "tsv", "parquet"], key=f"{key}_upload")
    if upload is not None:
        return uploaded(upload, key)
    path = st.text_input(f"…or path to {label.lower()}", value=current or "", key=f"{key}_path")
    return path.strip() or None


def columns_of(path: str) -> list[str]:
    if path.startswith(UPLOAD):
        name = path[len(UPLOAD) :]
        with plain_errors(f"Could not read {Path(name).name}"):
            return upload_columns(name, uploads[name])
    with plain_errors(f"Could not read {Path(path).name}"):
        return list(read_table(path).columns)


def pick_column(label: str, columns: list[str], key: str, current: str | None, optional=False):
    options = (["(none)"] if optional else []) + columns
    index = options.index(current) if current in options else 0
    choice = st.selectbox(label, options, index=index, key=key)
    return None if choice == "(none)" else choice


if source == "Bundled PatentsView demo":
    st.write(
        "133,541 PatentsView inventor mentions, 15 disambiguation versions (2017–2022) and the "
        "hand-reviewed inventor benchmark of Binette et al. (2022)."
    )
    if not saved_source.demo and st.button("Use the demo data", key="use_demo"):
        with plain_errors("Could not switch to the demo data"):
            project.use_demo()
        st.rerun()
else:
    # the saved files (none for the demo) fill in the widgets
    old_rec = saved_source.records or RecordsFile(path="", id_col="")
    old_pred = saved_source.predictions or PredictionsSource(layout="wide")
    old_bench = saved_source.benchmark or ClusteringFile(path="", id_col="", cluster_col="")

    st.subheader("Records")
    rec_path = pick_file("Records table", "records", old_rec.path)
    rec_cfg = None
    if rec_path:
        cols = columns_of(rec_path)
        id_col = pick_column("Record id column", cols, "records_id_col", old_rec.id_col)
        block_col = pick_column(
            "Block column (optional)", cols, "records_block_col", old_rec.block_col, True
        )
        shown = st.multiselect(
            "Fields shown to reviewers and searched",
            [c for c in cols if c != id_col],
            default=[c for c in old_rec.fields if c in cols] or [c for c in cols if c != id_col],
            key="records_fields",
        )
        rec_cfg = {"path": rec_path, "id_col": id_col, "block_col": block_col, "fields": shown}

    st.subheader("Predicted clusterings")
    layout = st.radio(
        "Layout",
        ["wide", "long"],
        format_func=lambda v: {
            "wide": "one file, a column per version",
            "long": "one file per version",
        }[v],
        index=1 if old_pred.layout == "long" else 0,
        key="pred_layout",
        horizontal=True,
    )
    pred_cfg = None
    if layout == "wide":
        pred_path = pick_file("Predictions table", "pred", old_pred.path)
        if pred_path:
            cols = columns_of(pred_path)
            pid = pick_column("Record id column", cols, "pred_id_col", old_pred.id_col)
            versions = st.multiselect(
                "Version columns (an empty cell = record outside that version)",
                [c for c in cols if c != pid],
                default=[c for c in old_pred.version_cols if c in cols]
                or [c for c in cols if c != pid],
                key="pred_version_cols",
            )
            pred_cfg = {
                "layout": "wide",
                "path": pred_path,
                "id_col": pid,
                "version_cols": versions,
            }
    else:
        pred_uploads = st.file_uploader(
            "Prediction files (one per version)",
            type=["csv", "tsv", "parquet"],
            accept_multiple_files=True,
            key="pred_files_upload",
        )
        saved = {f.path: f for f in old_pred.files}
        paths = [uploaded(u, "pred_files") for u in pred_uploads or []]
        typed_paths = st.text_area(
            "…or paths, one per line",
            value="\n".join(saved),
            key="pred_files_paths",
        )
        paths += [line.strip() for line in typed_paths.splitlines() if line.strip()]
        files = []
        for path in dict.fromkeys(paths):
            # Widgets keyed by the file, so a name stays with its file when others come or go.
            key, old = file_key(path), saved.get(path)
            cols = columns_of(path)
            c1, c2, c3 = st.columns(3)
            with c1:
                version = st.text_input(
                    f"Version name of {Path(path).name}",
                    value=old.version if old else Path(path).stem,
                    key=f"pred_v_{key}",
                )
            with c2:
                pid = pick_column(
                    "Record id column", cols, f"pred_id_{key}", old.id_col if old else None
                )
            with c3:
                cid = pick_column(
                    "Cluster id column", cols, f"pred_c_{key}", old.cluster_col if old else cols[-1]
                )
            files.append({"path": path, "version": version, "id_col": pid, "cluster_col": cid})
        if files:
            pred_cfg = {"layout": "long", "files": files}

    st.subheader("Existing benchmark (optional)")
    bench_path = pick_file("Benchmark table", "bench", old_bench.path)
    bench_cfg = None
    if bench_path:
        cols = columns_of(bench_path)
        bench_cfg = {
            "path": bench_path,
            "id_col": pick_column("Record id column", cols, "bench_id_col", old_bench.id_col),
            "cluster_col": pick_column(
                "True cluster id column", cols, "bench_cluster_col", old_bench.cluster_col
            ),
        }

    if st.button("Check and save project", key="save_project", type="primary"):
        if rec_cfg is None or pred_cfg is None:
            st.error("Give a records table and at least one predicted clustering first.")
            st.stop()
        new_source = {
            "source": "files",
            "records": rec_cfg,
            "predictions": pred_cfg,
            "benchmark": bench_cfg,
        }
        # Validate everything (uploads from temporary copies) before any write.
        with plain_errors("Not saved; the project is unchanged"):
            project.set_source(new_source, uploads)
        st.session_state.pop("queue_position", None)
        st.success("Project saved.")

data = project.data
st.subheader("Loaded")
c1, c2, c3 = st.columns(3)
c1.metric("Records", f"{len(data.records):,}")
c2.metric("Versions", len(data.versions))
c3.metric(
    "Benchmark records",
    "none" if data.benchmark is None else f"{len(data.benchmark):,}",
)
st.dataframe(
    pd.DataFrame(
        {
            "version": data.versions,
            "records": [len(p) for p in data.predictions.values()],
            "clusters": [len(cluster_sizes(p)) for p in data.predictions.values()],
        }
    ),
    hide_index=True,
    key="versions_table",
)
