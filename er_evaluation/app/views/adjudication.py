"""Adjudication: two reviewers' different decisions on a record side by side, and the final
decision, which the estimates then use."""

from __future__ import annotations

import streamlit as st

from er_evaluation.app.app_common import local_time, open_store, plain_errors, reviewer_name
from er_evaluation.review import ReviewError, StaleReviewError

st.title("Adjudication")
if st.session_state.get("adj_flash"):
    st.success(st.session_state.pop("adj_flash"))
store = open_store()
conflicts = store.conflicts()
open_items = conflicts[conflicts["kind"] == "reviewers_disagree"]
if open_items.empty:
    st.info("No disagreement between reviewers is waiting for adjudication.")
    st.stop()

records = list(dict.fromkeys(open_items["sampled_record"]))
st.caption(f"{len(records)} record(s) decided differently by two reviewers.")
record = st.selectbox("Record", records, key="adj_record")
rows = open_items[open_items["sampled_record"] == record].iloc[0]
history = {e.event_id: e for e in store.history(record)}
first, second = history[int(rows["event_id"])], history[int(rows["other_event_id"])]
in_force = store.decision(record)

columns = st.columns(2)
for column, event in zip(columns, (first, second), strict=True):
    with column:
        st.markdown(f"**{event.reviewer}** — {event.status}, {local_time(event.created_at)}")
        st.write(f"Removed: {list(event.removed) or 'none'}")
        st.write(f"Added: {list(event.added) or 'none'}")
        if event.notes:
            st.write(f"Notes: {event.notes}")
        st.caption(f"True cluster: {', '.join(map(str, event.true_cluster))}")

me = reviewer_name()
if not me:
    st.warning("Enter your name as reviewer in the sidebar to record the final decision.")


def adjudicate(item, base, removed: list, added: list, notes: str) -> None:
    try:
        store.record_review(
            reviewer=reviewer_name(),
            sampled_record=item,
            predicted_cluster=base.predicted_cluster,
            shown_records=base.shown_records,
            removed=removed,
            added=added,
            notes=notes,
            version=base.version,
            based_on=st.session_state["adj_in_force"],
            adjudication=True,
        )
    except StaleReviewError as stale:
        st.session_state["adj_error"] = f"Not saved: {stale} (the page shows it now)."
        return
    except ReviewError as err:
        st.session_state["adj_error"] = f"Not saved: {err}"
        return
    st.session_state["adj_flash"] = f"Final decision on {item} recorded."


st.session_state["adj_in_force"] = None if in_force is None else in_force.event_id
if st.session_state.get("adj_error"):
    st.error(st.session_state.pop("adj_error"))
c1, c2 = st.columns(2)
for column, event in zip((c1, c2), (first, second), strict=True):
    column.button(
        f"Keep {event.reviewer}'s decision",
        key=f"adj_keep_{event.event_id}",
        disabled=not me,
        on_click=adjudicate,
        args=(record, event, list(event.removed), list(event.added), event.notes),
    )

st.markdown("**Or decide yourself**")
candidates = list(dict.fromkeys([*first.added, *second.added]))
removable = [r for r in first.shown_records if r != record]
removed = st.multiselect(
    "Remove from the predicted cluster",
    removable,
    default=[r for r in first.removed if r in removable],
    key=f"adj_removed_{record}",
)
added = st.multiselect(
    "Add",
    candidates,
    default=[a for a in candidates if a in first.added],
    key=f"adj_added_{record}",
)
notes = st.text_input("Notes", key=f"adj_notes_{record}")
with plain_errors("Cannot save"):
    st.button(
        "Save the final decision",
        key=f"adj_save_{record}",
        type="primary",
        disabled=not me,
        on_click=adjudicate,
        args=(record, first, removed, added, notes),
    )
