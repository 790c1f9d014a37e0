"""Review queue: correct each sampled record's predicted cluster; every save goes to the store.

Every save is bound to what the page showed: the buttons of an item carry that item and
the decision shown (per-item widget keys, callbacks with the values of that render), so a
press that arrives after the page moved on can only concern the item it was pressed on,
and the store refuses it if that item's decision changed meanwhile (a conflict view then
offers keep mine / keep theirs / merge).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import streamlit as st

from er_evaluation.app.app_common import (
    default_sample,
    draw_queue,
    load_project,
    local_time,
    min_dwell_seconds,
    open_store,
    plain_errors,
    project_dir,
    read_queue,
    read_sample_config,
    record_index,
    reviewer_name,
    save_queue,
    true_clusters,
)
from er_evaluation.io import read_table
from er_evaluation.review import (
    ReviewError,
    ReviewEvent,
    StaleReviewError,
    check_review,
    default_name_cols,
    differing_fields,
    double_reviewed,
    names_beside,
    reviewer_queue,
)
from er_evaluation.review.project import keep_input, queue_fits

TICK = "does not belong"
ADD = "add"
SHORTCUTS = {
    "prev": "Alt+P",
    "next": "Alt+N",
    "save": "Ctrl+Enter",
    "correct": "Alt+A",
    "undo": "Alt+U",
}

st.title("Review queue")
for kind in ("flash", "flash_error"):
    if st.session_state.get(kind):
        (st.success if kind == "flash" else st.error)(st.session_state.pop(kind))
data = load_project()
store = open_store()
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
reason = queue_fits(data, settings, queue)
if reason:
    st.warning(f"The saved sample no longer fits the project data ({reason}): draw a new one.")
    st.page_link("views/sample.py", label="Draw a sample to review")
    st.stop()
version = settings["version"]
prediction = data.predictions[version]
blind = st.session_state.get("blind", False)

me = reviewer_name()
if not me:
    st.info("Enter your name as reviewer in the sidebar: decisions are saved under it.")
if queue["reviewer"].notna().any():
    mine = st.toggle("Only my records", value=me in set(queue["reviewer"]), key="only_mine")
    if mine:
        queue = reviewer_queue(queue, me)
        if queue.empty:
            st.warning(f"No records are assigned to {me!r}: set your name in the sidebar.")
            st.stop()
queue = queue.reset_index(drop=True)
ids = queue["record_id"]
# Double-reviewed items of this reviewer are blind: only their own decision is shown and
# saved against, others' decisions on them are neither shown nor replaced.
independent = (
    double_reviewed(queue) & ((queue["reviewer"] == me) | (queue["second_reviewer"] == me))
).to_numpy()

own = store.own_decisions()
own = set(own.loc[own["reviewer"] == me, "sampled_record"]) if me else set()
# A queue record is done once it belongs to a reviewed true cluster (its own or another's);
# a blind double-reviewed one once this reviewer decided it.
covered = np.where(independent, ids.isin(own).to_numpy(), ids.isin(true_clusters(store).index))
reviewed = set(store.reviewed_records())
n_done = int(covered.sum())
st.progress(n_done / len(queue), text=f"{n_done} of {len(queue)} records reviewed")

conflicts = store.conflicts() if reviewed else None
if conflicts is not None and len(conflicts):
    blind_items = set(ids[independent])
    conflicts = conflicts[~conflicts["sampled_record"].isin(blind_items)]
if conflicts is not None and len(conflicts):
    with st.expander(f"{len(conflicts)} conflicting decision(s)", icon=":material/warning:"):
        st.caption(
            "merged_back: a record removed from a sampled record's cluster by one decision is "
            "put back by another decision's true cluster. reviewers_disagree: two reviewers "
            "decided the same record differently and neither saw the other's decision. "
            "Settle them on the Adjudication page."
        )
        st.dataframe(conflicts, hide_index=True, key="conflicts")

position = min(int(st.session_state.get("queue_position", 0)), len(queue) - 1)


def next_unreviewed(start: int, done: np.ndarray) -> int:
    """First item not done after ``start``, wrapping around; ``start`` when all are done."""
    todo = np.flatnonzero(~done)
    if len(todo) == 0:
        return start
    after = todo[todo > start]
    return int(after[0] if len(after) else todo[0])


if "queue_position" not in st.session_state:
    position = next_unreviewed(-1, covered)

nav = st.columns([1, 1, 1.5, 2.5])
if nav[0].button("◀ Previous", key="nav_prev", disabled=position == 0, shortcut=SHORTCUTS["prev"]):
    position -= 1
if nav[1].button(
    "Next ▶", key="nav_next", disabled=position >= len(queue) - 1, shortcut=SHORTCUTS["next"]
):
    position += 1
if nav[2].button("Next unreviewed", key="nav_next_unreviewed", icon=":material/skip_next:"):
    position = next_unreviewed(position, covered)
st.session_state["goto"] = position + 1


def jump() -> None:
    st.session_state["queue_position"] = int(st.session_state["goto"]) - 1


nav[3].number_input("Go to item", min_value=1, max_value=len(queue), key="goto", on_change=jump)
st.session_state["queue_position"] = position

record = ids.iloc[position]
alone = bool(independent[position])
row = data.records.loc[record]
if alone:
    status = "reviewed by you" if record in own else "to review (double review)"
else:
    status = "reviewed" if record in reviewed else "covered" if covered[position] else "to review"
st.subheader(f"Item {position + 1} of {len(queue)}: `{record}` — {status}")


def forget_item(item) -> None:
    """Drop the item's widget state and pinned decision so it is drawn again from the store."""
    for key in ("cluster", "added", "notes", "conflict", "basis"):
        st.session_state.pop(f"{key}_{item}", None)


def in_store():
    return store.decision(record, reviewer=me) if alone else store.decision(record)


# The decision this page shows is pinned when the item is opened: edits and saves are
# based on it, even if someone saves a newer decision while the page is open (the save is
# then refused and the conflict view shows both, instead of silently mixing them).
if st.session_state.get("shown_item") != record or f"basis_{record}" not in st.session_state:
    forget_item(record)
    st.session_state[f"basis_{record}"] = in_store()
st.session_state["shown_item"] = record
shown = st.session_state[f"basis_{record}"]
latest = in_store()
if (latest and latest.event_id) != (shown and shown.event_id):
    st.warning(
        f"Since you opened this item, {'a decision was undone' if latest is None else latest.reviewer + ' saved a new decision'}"
        ": saving will show both so you can choose."
    )
if alone and me:
    st.caption("Double review: you see and replace only your own decision on this record.")
if shown is not None:
    who = "you" if alone else shown.reviewer
    role = "adjudicated" if shown.role == "adjudication" else shown.status
    st.caption(
        f"Current decision ({role}) saved by {who} at {local_time(shown.created_at)}: "
        f"removed {list(shown.removed)}, added {list(shown.added)}. "
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
initial_removed = list(shown.removed) if shown is not None else []


def ticked(item, rows: pd.Index, start: list) -> list:
    """Records ticked in ``item``'s cluster table now: the ticks it opened with, changed by
    the edits in its widget state (read in callbacks, before the page is drawn again)."""
    ticks = rows.isin(start)
    state = st.session_state.get(f"cluster_{item}") or {}
    for index, change in (state.get("edited_rows") or {}).items():
        if TICK in change:
            ticks[int(index)] = bool(change[TICK])
    return list(rows[ticks])


def decision_text(event: ReviewEvent | dict | None) -> str:
    if event is None:
        return "no decision"
    get = event.get if isinstance(event, dict) else lambda k: getattr(event, k)
    notes = get("notes")
    return f"removed {list(get('removed'))}, added {list(get('added'))}" + (
        f"; notes: {notes}" if notes else ""
    )


def save(
    item, cluster, rows: list, start: list, based_on, alone: bool, correct: bool, move_to: int
):
    """Save the decision on ``item`` as it stands in its widgets, bound to ``based_on``."""
    who = reviewer_name()
    if not who:
        st.session_state["flash_error"] = "Not saved: enter your name as reviewer first."
        return
    if st.session_state.get("shown_item") != item:
        st.session_state["flash_error"] = (
            f"Not saved: the press was for {item!r}, which is no longer on the page."
        )
        return
    # A double press: the first saves an item and brings up the next, the second lands on
    # the next item's button before anyone could have looked at it. The time counts from
    # the end of the run that drew the item (when it is on screen), not from the save: on
    # a busy server drawing the next item alone can take longer than the guard.
    saved, saved_at = st.session_state.get("last_save", (None, -math.inf))
    drawn, drawn_at = st.session_state.get("drawn", (None, math.inf))
    on_screen = time.monotonic() - drawn_at if drawn == item else 0.0
    after_save = drawn != item or drawn_at >= saved_at
    if saved not in (None, item) and after_save and on_screen < min_dwell_seconds():
        st.session_state["flash_error"] = (
            f"Not saved: {item!r} came up after saving {saved!r} and this press came "
            f"{on_screen:.1f} s after it was shown, before it could be looked at; press "
            "again to save it."
        )
        return
    removed = [] if correct else ticked(item, pd.Index(rows), start)
    added = [] if correct else list(st.session_state.get(f"added_{item}", []))
    notes = st.session_state.get(f"notes_{item}", "")
    mine = {"removed": removed, "added": added, "notes": notes}
    write(item, cluster, rows, mine, based_on, alone, move_to)


def write(item, cluster, rows, mine: dict, based_on, alone: bool, move_to: int | None) -> None:
    who = reviewer_name()
    try:
        store.record_review(
            reviewer=who,
            sampled_record=item,
            predicted_cluster=cluster,
            shown_records=rows,
            removed=mine["removed"],
            added=mine["added"],
            notes=mine["notes"],
            version=version,
            based_on=based_on,
            independent=alone,
        )
    except StaleReviewError as stale:
        now = stale.current
        if (
            now is not None
            and now.reviewer == who
            and set(now.removed) == set(mine["removed"])
            and set(now.added) == set(mine["added"])
            and now.notes == mine["notes"]
        ):
            # the same decision pressed twice: it is saved once, nothing to resolve
            st.session_state["flash"] = f"Already saved: {item}."
            return
        st.session_state[f"conflict_{item}"] = {
            "mine": mine,
            "theirs": None if now is None else now.event_id,
        }
        return
    except ReviewError as err:
        st.session_state["flash_error"] = f"Not saved: {err}"
        return
    forget_item(item)
    if move_to is not None:
        st.session_state["queue_position"] = move_to
    st.session_state["last_saved"] = item  # for the toast, which pops it
    st.session_state["last_save"] = (item, time.monotonic())


def resolve(item, cluster, rows, mine: dict, theirs: ReviewEvent | None, how: str, alone: bool):
    """Settle a refused save: keep mine, keep theirs, or merge both (union of removals,
    additions and notes), each saved against the decision now shown."""
    based_on = None if theirs is None else theirs.event_id
    if how == "theirs":
        forget_item(item)
        st.session_state["flash"] = f"Kept the saved decision on {item}."
        return
    if how == "merge" and theirs is not None:
        notes = " / ".join(n for n in dict.fromkeys([theirs.notes, mine["notes"]]) if n)
        mine = {
            "removed": list(dict.fromkeys([*theirs.removed, *mine["removed"]])),
            "added": list(dict.fromkeys([*theirs.added, *mine["added"]])),
            "notes": notes,
        }
    st.session_state.pop(f"conflict_{item}", None)
    write(item, cluster, rows, mine, based_on, alone, None)


conflict = st.session_state.get(f"conflict_{record}")
if conflict is not None:
    theirs = None
    if conflict["theirs"] is not None:
        theirs = next(e for e in store.history(record) if e.event_id == conflict["theirs"])
    st.error(
        "Not saved: this record's decision changed since your page showed it. "
        "Choose which decision to keep."
    )
    left, right = st.columns(2)
    left.markdown("**Your unsaved decision**")
    left.write(decision_text(conflict["mine"]))
    if theirs is None:
        right.markdown("**Saved decision**")
        right.write("the decision you saw has been undone: none is in force")
    else:
        right.markdown(f"**Saved by {theirs.reviewer} at {local_time(theirs.created_at)}**")
        right.write(decision_text(theirs))
    args = (record, cluster_id, list(members), conflict["mine"], theirs)
    c1, c2, c3 = st.columns(3)
    c1.button("Keep mine", key=f"keep_mine_{record}", on_click=resolve, args=(*args, "mine", alone))
    c2.button(
        "Keep theirs", key=f"keep_theirs_{record}", on_click=resolve, args=(*args, "theirs", alone)
    )
    c3.button(
        "Merge both",
        key=f"merge_{record}",
        on_click=resolve,
        args=(*args, "merge", alone),
        disabled=theirs is None,
    )

table = data.records.loc[members, data.fields].copy()
table.insert(0, TICK, table.index.isin(initial_removed))
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
st.caption(f"{len(removed)} of {len(members)} records ticked as not belonging.")

added_key = f"added_{record}"
if added_key not in st.session_state:
    st.session_state[added_key] = list(shown.added) if shown is not None else []
added: list = st.session_state[added_key]


def differences(rows: list) -> None:
    """The sampled record's fields above the others', differing values highlighted."""
    if len(rows) < 1:
        return
    fields = list(data.fields)
    frame = data.records.loc[[record, *rows], fields].astype(object)
    marks = differing_fields(data.records, record, rows, fields)
    flags = pd.concat(
        [pd.DataFrame(False, index=pd.Index([record], dtype=object), columns=fields), marks]
    ).to_numpy()
    frame.insert(0, "record", [f"{record} (sampled)", *map(str, rows)])
    styled = frame.style.apply(
        lambda _: np.where(flags, "background-color: #fde2c8", ""), axis=None, subset=fields
    )
    st.dataframe(styled, hide_index=True, key=f"compare_{record}_{len(rows)}")


with st.expander("Compare fields with the sampled record", expanded=len(members) <= 12):
    st.caption(
        "Highlighted: values that differ from the sampled record's (case and accents ignored)."
    )
    differences([*members.drop(record), *added])

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

notes_key = f"notes_{record}"
if notes_key not in st.session_state:
    st.session_state[notes_key] = shown.notes if shown is not None else ""
st.text_area("Notes", key=notes_key)

# Names compared beside the sampled one: PatentsView's first/last, or a "name" column.
names = default_name_cols(data.records.columns)
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

based_on = None if shown is None else shown.event_id
# where the page goes after a save: the next item not done, this one counted as done
after = next_unreviewed(position, covered | (np.arange(len(queue)) == position))
common = (record, cluster_id, list(members), initial_removed, based_on, alone)
b1, b2, b3 = st.columns(3)
b1.button(
    "Correct as is",
    key=f"correct_{record}",
    disabled=bool(removed or added) or not me,
    on_click=save,
    args=(*common, True, after),
    shortcut=SHORTCUTS["correct"],
    help="Save the predicted cluster as correct (Alt+A)",
)
b2.button(
    "Save review",
    key=f"save_{record}",
    type="primary",
    disabled=problem is not None or not me,
    on_click=save,
    args=(*common, False, after),
    shortcut=SHORTCUTS["save"],
)


def undo(item, event_id: int | None, confirm: bool) -> None:
    try:
        store.undo(
            reviewer=reviewer_name(), sampled_record=item, event_id=event_id, confirm_other=confirm
        )
    except ReviewError as err:
        st.session_state["flash_error"] = f"Undo failed: {err}"
        return
    forget_item(item)
    st.session_state["flash"] = f"Undid a save on {item}."


history = store.history(record) if me else []
undone = {e.undoes for e in history if e.status == "undo"}
live = [e for e in history if e.status != "undo" and e.event_id not in undone]
my_live = [e for e in live if e.reviewer == me]
b3.button(
    "Undo my last save",
    key=f"undo_{record}",
    disabled=not my_live,
    on_click=undo,
    args=(record, None, False),
    shortcut=SHORTCUTS["undo"],
)
if not alone and shown is not None and shown.reviewer != me and me:
    confirm = st.checkbox(
        f"Undo {shown.reviewer}'s decision instead (saved {local_time(shown.created_at)})",
        key=f"undo_other_confirm_{record}",
    )
    st.button(
        f"Undo {shown.reviewer}'s save",
        key=f"undo_other_{record}",
        disabled=not confirm,
        on_click=undo,
        args=(record, shown.event_id, True),
    )
if st.session_state.get("last_saved"):
    st.toast(f"Saved review of {st.session_state.pop('last_saved')}")
st.caption(
    "Keys: " + ", ".join(f"{k} {v}" for k, v in SHORTCUTS.items()) + " (Ctrl is ⌘ on a Mac)."
)
# The item and its buttons are drawn (the export panel below opens collapsed): from here
# on the item is on screen, and the double-press guard in save() counts from now.
if st.session_state.get("drawn", (None,))[0] != record:
    st.session_state["drawn"] = (record, time.monotonic())

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
    if sheet is not None and st.button("Import sheet", key="import_sheet_go", disabled=not me):
        with plain_errors("Import failed"):
            kept = keep_input(sheet.getvalue(), sheet.name, project_dir())
            events = store.import_sheet(
                read_table(kept), prediction=prediction, reviewer=me, version=version
            )
        st.session_state["flash"] = f"Imported {len(events)} reviews."
        st.rerun()
