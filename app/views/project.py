"""Project / data: the bundled demo or your own records, predictions and benchmark."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st
from app_common import (
    DEMO_CONFIG,
    load_project,
    plain_errors,
    project_dir,
    read_config,
    save_upload,
    write_config,
)

from er_evaluation.clustering import cluster_sizes
from er_evaluation.io import read_table

st.title("Project and data")

folder = st.text_input("Project folder", value=str(project_dir()), key="project_folder")
if st.button("Open this project folder", key="open_folder"):
    st.session_state["project_dir_chosen"] = folder
    st.rerun()

config = read_config()
source = st.radio(
    "Data",
    ["Bundled PatentsView demo", "My own files"],
    index=0 if config.get("source", "demo") == "demo" else 1,
    key="source",
    horizontal=True,
)


def pick_file(label: str, key: str, current: str | None) -> str | None:
    """A file either uploaded (kept in the project folder) or given by path."""
    upload = st.file_uploader(label, type=["csv", "tsv", "parquet"], key=f"{key}_upload")
    if upload is not None:
        return str(save_upload(upload))
    path = st.text_input(f"…or path to {label.lower()}", value=current or "", key=f"{key}_path")
    return path.strip() or None


def columns_of(path: str) -> list[str]:
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
    if config.get("source") != "demo" and st.button("Use the demo data", key="use_demo"):
        write_config(dict(DEMO_CONFIG))
        st.rerun()
else:
    old_rec = config.get("records", {}) if config.get("source") == "files" else {}
    old_pred = config.get("predictions", {}) if config.get("source") == "files" else {}
    old_bench = (config.get("benchmark") or {}) if config.get("source") == "files" else {}

    st.subheader("Records")
    rec_path = pick_file("Records table", "records", old_rec.get("path"))
    rec_cfg = None
    if rec_path:
        cols = columns_of(rec_path)
        id_col = pick_column("Record id column", cols, "records_id_col", old_rec.get("id_col"))
        block_col = pick_column(
            "Block column (optional)", cols, "records_block_col", old_rec.get("block_col"), True
        )
        shown = st.multiselect(
            "Fields shown to reviewers and searched",
            [c for c in cols if c != id_col],
            default=[c for c in old_rec.get("fields", []) if c in cols]
            or [c for c in cols if c != id_col],
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
        index=1 if old_pred.get("layout") == "long" else 0,
        key="pred_layout",
        horizontal=True,
    )
    pred_cfg = None
    if layout == "wide":
        pred_path = pick_file("Predictions table", "pred", old_pred.get("path"))
        if pred_path:
            cols = columns_of(pred_path)
            pid = pick_column("Record id column", cols, "pred_id_col", old_pred.get("id_col"))
            versions = st.multiselect(
                "Version columns (an empty cell = record outside that version)",
                [c for c in cols if c != pid],
                default=[c for c in old_pred.get("version_cols", []) if c in cols]
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
        uploads = st.file_uploader(
            "Prediction files (one per version)",
            type=["csv", "tsv", "parquet"],
            accept_multiple_files=True,
            key="pred_files_upload",
        )
        paths = [str(save_upload(u)) for u in uploads or []]
        typed = st.text_area(
            "…or paths, one per line",
            value="\n".join(f["path"] for f in old_pred.get("files", [])),
            key="pred_files_paths",
        )
        paths += [line.strip() for line in typed.splitlines() if line.strip()]
        files = []
        for i, path in enumerate(paths):
            cols = columns_of(path)
            c1, c2, c3 = st.columns(3)
            with c1:
                version = st.text_input("Version name", value=Path(path).stem, key=f"pred_v_{i}")
            with c2:
                pid = pick_column("Record id column", cols, f"pred_id_{i}", None)
            with c3:
                cid = pick_column("Cluster id column", cols, f"pred_c_{i}", cols[-1])
            files.append({"path": path, "version": version, "id_col": pid, "cluster_col": cid})
        if files:
            pred_cfg = {"layout": "long", "files": files}

    st.subheader("Existing benchmark (optional)")
    bench_path = pick_file("Benchmark table", "bench", old_bench.get("path"))
    bench_cfg = None
    if bench_path:
        cols = columns_of(bench_path)
        bench_cfg = {
            "path": bench_path,
            "id_col": pick_column(
                "Record id column", cols, "bench_id_col", old_bench.get("id_col")
            ),
            "cluster_col": pick_column(
                "True cluster id column", cols, "bench_cluster_col", old_bench.get("cluster_col")
            ),
        }

    if st.button("Check and save project", key="save_project", type="primary"):
        if rec_cfg is None or pred_cfg is None:
            st.error("Give a records table and at least one predicted clustering first.")
            st.stop()
        new_config = {
            "source": "files",
            "records": rec_cfg,
            "predictions": pred_cfg,
            "benchmark": bench_cfg,
        }
        load_project(new_config)  # shows the library's validation error and stops if invalid
        write_config(new_config)
        st.session_state.pop("queue_position", None)
        st.success("Project saved.")
        config = new_config

data = load_project(read_config())
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
