"""Sample: choose the design, size, seed and starting version; save the review queue."""

from __future__ import annotations

import streamlit as st
from app_common import (
    DESIGNS,
    draw_queue,
    load_project,
    plain_errors,
    read_queue,
    read_sample_config,
    save_queue,
)

st.title("Sample what to review")
data = load_project()
current = read_sample_config()

design = st.radio(
    "Design",
    list(DESIGNS),
    format_func=DESIGNS.get,
    index=list(DESIGNS).index(current["design"]) if current else 0,
    key="sample_design",
)
if design == "blocks" and data.block_col is None:
    st.error("The block design needs a block column: map one on the Project page.")
    st.stop()
c1, c2, c3 = st.columns(3)
size = c1.number_input(
    {"records": "Records to sample", "clusters": "Predicted clusters", "blocks": "Blocks"}[design],
    min_value=1,
    value=int(current["size"]) if current else 50,
    step=10,
    key="sample_size",
)
seed = c2.number_input(
    "Seed", min_value=0, value=int(current["seed"]) if current else 1, key="sample_seed"
)
versions = data.versions
version = c3.selectbox(
    "Start from version",
    versions,
    index=versions.index(current["version"])
    if current and current["version"] in versions
    else len(versions) - 1,
    key="sample_version",
    help="Reviewers see this version's predicted cluster of each sampled record and correct it.",
)
reviewers_text = st.text_input(
    "Split among reviewers (comma-separated names; empty = one shared queue)",
    value=", ".join(current.get("reviewers", [])) if current else "",
    key="sample_reviewers",
)
reviewers = [r.strip() for r in reviewers_text.split(",") if r.strip()]
double_share = st.number_input(
    "Share of units reviewed twice, blind (double review; needs two or more reviewers)",
    min_value=0.0,
    max_value=1.0,
    value=float(current.get("double_share", 0.0)) if current else 0.0,
    step=0.05,
    key="sample_double_share",
    help="These units go to a second reviewer too; neither sees the other's decision. "
    "Agreement and adjudication pages compare and settle them.",
)

if st.button("Draw and save the sample", key="draw_sample", type="primary"):
    settings = {
        "design": design,
        "size": int(size),
        "seed": int(seed),
        "version": version,
        "reviewers": reviewers,
        "double_share": float(double_share),
    }
    with plain_errors("Could not draw the sample"):
        queue = draw_queue(data, settings)
    with plain_errors("Could not save the sample"):
        save_queue(queue, settings)
    st.session_state["queue_position"] = 0
    st.success(f"Saved a sample of {len(queue):,} records to review.")

queue = read_queue()
if queue is None:
    st.info("No sample yet: choose a design and draw one.")
    st.stop()
settings = read_sample_config()
if (
    settings["version"] not in data.predictions
    or (data.records.index.get_indexer(queue["record_id"]) < 0).any()
):
    st.warning("The saved sample no longer fits the project data: draw a new one.")
    st.stop()
st.subheader("What will be reviewed")
st.write(
    f"Design **{DESIGNS[settings['design']]}**, {settings['size']} units, seed {settings['seed']}, "
    f"starting from version **{settings['version']}**: {len(queue):,} records in the queue "
    f"({queue['unit'].nunique():,} sampled units)."
)
if "reviewer" in queue and queue["reviewer"].notna().any():
    st.dataframe(
        queue.groupby("reviewer").size().rename("records").reset_index(),
        hide_index=True,
        key="sample_split",
    )
shown = data.records.loc[queue["record_id"], data.fields].reset_index(names="record")
shown.insert(1, "unit", queue["unit"].to_numpy())
if queue["reviewer"].notna().any():
    shown.insert(2, "reviewer", queue["reviewer"].to_numpy())
    if queue["second_reviewer"].notna().any():
        shown.insert(3, "second_reviewer", queue["second_reviewer"].to_numpy())
st.dataframe(shown, hide_index=True, key="sample_table", height=420)
