"""Adjudication: two reviewers' different decisions on a record side by side, record by record
with their fields, and the final decision, which the estimates then use."""

from __future__ import annotations

import numpy as np
import streamlit as st

from er_evaluation.app.app_common import local_time, open_project, plain_errors, reviewer_name
from er_evaluation.review import ReviewError, StaleReviewError

FINAL = "in the final cluster"
HIGHLIGHT = "background-color: #fde2c8"

st.title("Adjudication")
if st.session_state.get("adj_flash"):
    st.success(st.session_state.pop("adj_flash"))
project = open_project()
data = project.data
with plain_errors("Could not read the disagreements"):
    open_items = project.disagreements().table
if open_items.empty:
    st.info("No disagreement between reviewers is waiting for adjudication.")
    st.stop()

records = list(open_items["sampled_record"])
st.caption(f"{len(records)} record(s) decided differently by two reviewers.")
record = st.selectbox("Record", records, key="adj_record")
conflicts = project.conflicts()
row = conflicts[
    (conflicts["kind"] == "reviewers_disagree")
    & (conflicts["sampled_record"].map(repr) == repr(record))
].iloc[0]
history = {e.event_id: e for e in project.history(record)}
first, second = history[int(row["event_id"])], history[int(row["other_event_id"])]
in_force = project.decision(record)

columns = st.columns(2)
for column, event in zip(columns, (first, second), strict=True):
    with column:
        st.markdown(f"**{event.reviewer}** — {event.status}, {local_time(event.created_at)}")
        st.caption(
            f"removed {len(event.removed)}, added {len(event.added)}"
            + (f"; notes: {event.notes}" if event.notes else "")
        )

# Every record either reviewer saw or added, with its fields and each side's decision.
rows = list(dict.fromkeys([*first.shown_records, *first.added, *second.added]))
fields = list(data.fields)
table = data.records.loc[rows, fields].astype(object).copy()
in_first, in_second = set(first.true_cluster), set(second.true_cluster)
table.insert(0, FINAL, [r in in_first for r in rows])
table.insert(1, first.reviewer, ["✓" if r in in_first else "✗" for r in rows])
label = second.reviewer if second.reviewer != first.reviewer else f"{second.reviewer} (2)"
table.insert(2, label, ["✓" if r in in_second else "✗" for r in rows])
table.insert(3, "record", [f"★ {r} (sampled)" if r == record else str(r) for r in rows])
differ = np.array([(r in in_first) != (r in in_second) for r in rows])


def style(frame):
    out = np.full(frame.shape, "", dtype=object)
    out[differ, 1:3] = HIGHLIGHT
    return out


st.caption(
    "✓ in that reviewer's true cluster, ✗ not; highlighted where they differ. Tick "
    f"'{FINAL}' to decide yourself (it starts from {first.reviewer}'s decision)."
)
edited = st.data_editor(
    table.style.apply(style, axis=None),
    hide_index=True,
    disabled=[c for c in table.columns if c != FINAL],
    column_config={
        FINAL: st.column_config.CheckboxColumn(FINAL, pinned=True),
        "record": st.column_config.TextColumn("record", pinned=True),
    },
    key=f"adj_table_{record}",
    height=min(600, 40 + 35 * len(table)),
)

me = reviewer_name()
if not me:
    st.warning("Choose your name as reviewer in the sidebar to record the final decision.")


def adjudicate(item, keep: str | None, final: list | None, notes: str) -> None:
    based_on = st.session_state.get("adj_in_force")
    try:
        if keep is not None:
            project.adjudicate(reviewer_name(), item, keep=keep, notes=notes, based_on=based_on)
        else:
            shown = list(first.shown_records)
            removed = [r for r in shown if r not in set(final)]
            added = [r for r in final if r not in set(shown)]
            project.adjudicate(
                reviewer_name(), item, removed=removed, added=added, notes=notes, based_on=based_on
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
notes = st.text_input("Notes of the final decision", key=f"adj_notes_{record}")
c1, c2 = st.columns(2)
for column, event in zip((c1, c2), (first, second), strict=True):
    column.button(
        f"Keep {event.reviewer}'s decision",
        key=f"adj_keep_{event.event_id}",
        disabled=not me,
        on_click=adjudicate,
        args=(record, event.reviewer, None, notes),
    )
final = [r for r, keep in zip(rows, edited[FINAL].to_numpy(), strict=True) if keep]
st.button(
    "Save the ticked cluster as the final decision",
    key=f"adj_save_{record}",
    type="primary",
    disabled=not me or record not in set(final),
    on_click=adjudicate,
    args=(record, None, final, notes),
    help="The sampled record must stay in its own cluster.",
)
