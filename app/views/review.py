"""Review queue: correct each sampled record's predicted cluster; every save goes to the store."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
from app_common import (
    default_sample,
    draw_queue,
    load_project,
    open_store,
    plain_errors,
    project_dir,
    read_queue,
    read_sample_config,
    record_index,
    reviewer_name,
    save_queue,
    save_upload,
    true_clusters,
)

from er_evaluation.io import read_table
from er_evaluation.review import ReviewError, check_review, names_beside

TICK = "does not belong"
ADD = "add"

st.title("Review queue")
if st.session_state.get("flash"):
    st.success(st.session_state.pop("flash"))
data = load_project()
queue = read_queue()
if queue is None:
    if data.source != "demo":
        st.info("No sample yet.")
        st.page_link("views/sample.py", label="Draw a sample to review")
        st.stop()
    # The demo opens ready to review: a default record sample, changeable on the Sample page.
    settings = default_sample(data)
    queue = draw_queue(data, settings)
    save_queue(queue, settings)
settings = read_sample_config()
version = settings["version"]
# get_indexer uses the index's cached hash table (Series.isin rehashes 133k ids: 1.5 s)
stale = data.records.index.get_indexer(queue["record_id"]) < 0
if version not in data.predictions or stale.any():
    # The project's data changed after the sample was drawn.
    reason = (
        f"version {version!r} is not in the current data"
        if version not in data.predictions
        else f"{int(stale.sum())} sampled records are not in the current records"
    )
    st.warning(f"The saved sample no longer fits the project data ({reason}): draw a new one.")
    st.page_link("views/sample.py", label="Draw a sample to review")
    st.stop()
prediction = data.predictions[version]
store = open_store()
blind = st.session_state.get("blind", False)

me = reviewer_name()
if queue["reviewer"].notna().any():
    mine = st.toggle("Only my records", value=me in set(queue["reviewer"]), key="only_mine")
    if mine:
        queue = queue[queue["reviewer"] == me]
        if queue.empty:
            st.warning(f"No records are assigned to {me!r}: set your name in the sidebar.")
            st.stop()
queue = queue.reset_index(drop=True)
ids = queue["record_id"]

# A queue record is done once it belongs to a reviewed true cluster (its own or another's).
covered = ids.isin(true_clusters(store).index).to_numpy()
reviewed = set(store.reviewed_records())
n_done = int(covered.sum())
st.progress(n_done / len(queue), text=f"{n_done} of {len(queue)} records reviewed")

conflicts = store.conflicts() if reviewed else None
if conflicts is not None and len(conflicts):
    with st.expander(f"{len(conflicts)} conflicting decision(s)", icon=":material/warning:"):
        st.caption(
            "These records were removed from a sampled record's cluster by one decision but "
            "another decision's true cluster includes them, so the derived clusters merged. "
            "Revisit the decisions named here."
        )
        st.dataframe(conflicts, hide_index=True, key="conflicts")

position = min(int(st.session_state.get("queue_position", 0)), len(queue) - 1)


def next_unreviewed(start: int) -> int:
    """First uncovered item after ``start``, wrapping around; ``start`` when all are done."""
    todo = np.flatnonzero(~covered)
    if len(todo) == 0:
        return start
    after = todo[todo > start]
    return int(after[0] if len(after) else todo[0])


if "queue_position" not in st.session_state:
    position = next_unreviewed(-1)

nav = st.columns([1, 1, 1.5, 2.5])
if nav[0].button("◀ Previous", key="nav_prev", disabled=position == 0):
    position -= 1
if nav[1].button("Next ▶", key="nav_next", disabled=position >= len(queue) - 1):
    position += 1
if nav[2].button("Next unreviewed", key="nav_next_unreviewed", icon=":material/skip_next:"):
    position = next_unreviewed(position)
st.session_state["goto"] = position + 1


def jump() -> None:
    st.session_state["queue_position"] = int(st.session_state["goto"]) - 1


nav[3].number_input("Go to item", min_value=1, max_value=len(queue), key="goto", on_change=jump)
st.session_state["queue_position"] = position

record = ids.iloc[position]
row = data.records.loc[record]
status = "reviewed" if record in reviewed else "covered" if covered[position] else "to review"
st.subheader(f"Item {position + 1} of {len(queue)}: `{record}` — {status}")

prev = store.decision(record)
if prev is not None:
    st.caption(
        f"Current decision ({prev.status}) saved by {prev.reviewer} at {prev.created_at}: "
        f"removed {list(prev.removed)}, added {list(prev.added)}. "
        "Saving again replaces it; the history is kept."
    )

if record in prediction.index:
    cluster_id = prediction[record]
    members = prediction.index[(prediction == cluster_id).to_numpy()]
else:
    cluster_id = None
    members = pd.Index([record])
    st.warning(
        f"`{record}` is not in {'this version' if blind else 'version ' + version}: "
        "starting from a singleton."
    )
# The sampled record first, then the others in record order.
members = pd.Index([record]).append(members.drop(record))
where = "a predicted cluster" if blind else f"version **{version}**, cluster `{cluster_id}`"
st.markdown(f"Predicted cluster of the sampled record ({where}): {len(members)} records.")

table = data.records.loc[members, data.fields].copy()
table.insert(0, TICK, table.index.isin(list(prev.removed) if prev is not None else []))
table.insert(1, "record", table.index)
edited = st.data_editor(
    table,
    hide_index=True,
    disabled=[c for c in table.columns if c != TICK],
    column_config={
        TICK: st.column_config.CheckboxColumn(TICK, help="Tick records of another person")
    },
    key=f"cluster_{record}",
    height=min(600, 40 + 35 * len(table)),
)
removed = list(edited.loc[edited[TICK], "record"])

added_key = f"added_{record}"
if added_key not in st.session_state:
    st.session_state[added_key] = list(prev.added) if prev is not None else []
added: list[str] = st.session_state[added_key]

with st.expander("Search all records to add missing ones", expanded=bool(added)):
    c1, c2, c3 = st.columns([3, 2, 1])
    query = c1.text_input("Search", key="search_query", placeholder="name, city, assignee, id…")
    field = c2.selectbox("In field", ["any field", *data.fields], key="search_field")
    same_block = c3.checkbox(
        "Same block",
        value=data.block_col is not None,
        key="search_block",
        disabled=data.block_col is None,
    )
    if query.strip():
        index = record_index(data)
        block = row[data.block_col] if same_block and data.block_col else None
        with plain_errors("Search failed"):
            hits = index.search(
                query, fields=None if field == "any field" else [field], block=block, limit=50
            )
        hits = hits[~hits.index.isin(members) & ~hits.index.isin(added)]
        if hits.empty:
            st.caption("No other records match.")
        else:
            found = data.records.loc[hits.index, data.fields].copy()
            found.insert(0, ADD, False)
            found.insert(1, "record", found.index)
            picked = st.data_editor(
                found,
                hide_index=True,
                disabled=[c for c in found.columns if c != ADD],
                key=f"search_{record}_{query}_{field}_{same_block}",
            )
            if st.button("Add ticked records", key="add_ticked"):
                st.session_state[added_key] = added + list(picked.loc[picked[ADD], "record"])
                st.rerun()
    if added:
        st.markdown("**Records to add**")
        st.dataframe(
            data.records.loc[added, data.fields].reset_index(names="record"),
            hide_index=True,
            key=f"added_table_{record}",
        )
        if st.button("Clear added records", key="clear_added"):
            st.session_state[added_key] = []
            st.rerun()

notes = st.text_area("Notes", value=prev.notes if prev is not None else "", key=f"notes_{record}")

# Names compared beside the sampled one: PatentsView's first/last, or a "name" column.
names = next(
    (cols for cols in (["name_first", "name_last"], ["name"]) if set(cols) <= set(data.records)),
    None,
)
problem = None
try:
    issues = check_review(
        prediction, record, removed, added, records=data.records if names else None, name_cols=names
    )
except ReviewError as exc:
    problem, issues = str(exc), []
    st.error(problem)
for issue in issues:
    st.warning(issue.message)
if added and names:
    with plain_errors("Could not show names"):
        beside = names_beside(data.records, record, added, name_cols=names)
    st.markdown("**Added names beside the sampled name**")
    st.dataframe(beside, hide_index=True, key=f"names_{record}")


def save(rem: list, add: list) -> None:
    with plain_errors("Could not save"):
        store.record_review(
            reviewer=me,
            sampled_record=record,
            predicted_cluster=cluster_id,
            shown_records=list(members),
            removed=rem,
            added=add,
            notes=notes,
            version=version,
        )
    st.session_state["queue_position"] = next_unreviewed(position)
    st.session_state["last_saved"] = record


b1, b2, b3 = st.columns(3)
if b1.button("Correct as is", key="correct_as_is", disabled=bool(removed or added)):
    save([], [])
    st.rerun()
if b2.button("Save review", key="save_review", type="primary", disabled=problem is not None):
    save(removed, added)
    st.rerun()
if b3.button("Undo the last save", key="undo_review", disabled=record not in reviewed):
    with plain_errors("Undo failed"):
        store.undo(reviewer=me, sampled_record=record)
    st.session_state.pop(added_key, None)
    st.rerun()
if st.session_state.get("last_saved"):
    st.toast(f"Saved review of {st.session_state.pop('last_saved')}")

with st.expander("Export the reviewed benchmark / import a review sheet"):
    st.caption(
        "The true clusters derived from every current decision, as a membership file "
        "(`record_id, cluster_id`) that the library's estimators read."
    )
    if st.button("Export to the project folder", key="export_benchmark", disabled=not reviewed):
        with plain_errors("Export failed"):
            path = store.export(project_dir() / "benchmark.csv")
        st.success(f"Exported {len(true_clusters(store)):,} records to `{path}`.")
    if reviewed:
        st.download_button(
            "Download benchmark.csv",
            true_clusters(store).rename_axis("record_id").rename("cluster_id").to_csv(),
            file_name="benchmark.csv",
            key="download_benchmark",
        )
    sheet = st.file_uploader(
        "Import an add/remove sheet (columns sampled_record, remove, add; optional "
        "predicted_cluster, reviewer, notes)",
        type=["csv", "tsv", "parquet"],
        key="import_sheet",
    )
    if sheet is not None and st.button("Import sheet", key="import_sheet_go"):
        with plain_errors("Import failed"):
            events = store.import_sheet(
                read_table(save_upload(sheet)), prediction=prediction, reviewer=me, version=version
            )
        st.session_state["flash"] = f"Imported {len(events)} reviews."
        st.rerun()
