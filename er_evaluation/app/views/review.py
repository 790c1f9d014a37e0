"""Review queue: correct each sampled record's predicted cluster; every save goes to the store.

Every save is bound to what the page showed: the buttons of an item carry that item and
the decision shown (per-item widget keys, callbacks with the values of that render), so a
press that arrives after the page moved on can only concern the item it was pressed on,
and the store refuses it if that item's decision changed meanwhile. The conflict view then
shows both decisions record by record, and the reviewer keeps both (the record goes to
adjudication), drops theirs, or starts a new decision from both and saves it themselves:
no decision is recorded that its reviewer did not make. Unsaved ticks, additions and notes
are kept as a draft, so a reload or a restart loses nothing.
"""

from __future__ import annotations

import math
import re
import time

import numpy as np
import pandas as pd
import streamlit as st

from er_evaluation.app.app_common import (
    local_time,
    min_dwell_seconds,
    open_project,
    plain_errors,
    project_dir,
    record_index,
    reviewer_name,
    show_error,
)
from er_evaluation.review import (
    Draft,
    ReviewError,
    ReviewEvent,
    StaleReviewError,
    check_review,
    default_name_cols,
    differing_fields,
    field_variants,
    names_beside,
    next_to_review,
    read_sheet,
)
from er_evaluation.review._design import distinct_units_note
from er_evaluation.review._folder import keep_input

TICK = "does not belong"
ADD = "add"
ROW = "#"
SAMPLED = "sampled"
SAMPLED_MARK = "★ "
SHORTCUTS = {
    "prev": "Alt+P",
    "next": "Alt+N",
    "save": "Ctrl+Enter",
    "correct": "Alt+A",
    "undo": "Alt+U",
}
HIGHLIGHT = "background-color: #fde2c8"
SAMPLED_ROW = "background-color: #e3efff; font-weight: 600"
VARIANTS_FROM = 10  # clusters of at least this many records get a summary of their variants
# Keys the grid cannot take: "/" opens and focuses the search, Alt+T the row-number box.
KEYS_SCRIPT = """
<script>
(() => {
  const doc = window.parent ? window.parent.document : document;
  if (doc.__erEvalKeys) return;
  doc.__erEvalKeys = true;
  const focus = (label) => {
    const input = doc.querySelector(`input[aria-label="${label}"]`);
    if (input) { input.focus(); input.select(); return true; }
    return false;
  };
  doc.addEventListener("keydown", (event) => {
    const typing = ["INPUT", "TEXTAREA"].includes(doc.activeElement?.tagName);
    if (event.key === "/" && !typing) {
      event.preventDefault();
      if (!focus("Search")) {
        const summary = [...doc.querySelectorAll("summary")]
          .find((s) => s.innerText.includes("Search all records"));
        if (summary) { summary.click(); setTimeout(() => focus("Search"), 300); }
      }
    } else if (event.altKey && (event.key === "t" || event.key === "T" || event.code === "KeyT")) {
      event.preventDefault();
      focus("Tick rows");
    }
  }, true);
})();
</script>
"""

st.title("Review queue")
for kind in ("flash", "flash_error"):
    if st.session_state.get(kind):
        (st.success if kind == "flash" else st.error)(st.session_state.pop(kind))
project = open_project()
data = project.data
if project.queue is None:
    if data.source != "demo":
        st.info("No sample yet.")
        st.page_link("views/sample.py", label="Draw a sample to review")
        st.stop()
    # The demo opens ready to review: a default record sample, changeable on the Sample page.
    with plain_errors("Could not draw the first sample"):
        project.draw(project.default_settings())
problem = project.queue_problem()
if problem:
    st.warning(f"The saved sample no longer fits the project data ({problem}): draw a new one.")
    st.page_link("views/sample.py", label="Draw a sample to review")
    st.stop()
settings = project.settings
version = settings.version
prediction = data.predictions[version]
blind_mode = st.session_state.get("blind", False)

me = reviewer_name()
if not me:
    st.info("Choose your name as reviewer in the sidebar: decisions are saved under it.")
queue = project.queue
mine_only = False
if me and queue["reviewer"].notna().any():
    assigned = me in set(queue["reviewer"]) | set(queue["second_reviewer"].dropna())
    mine_only = st.toggle("Only my items", value=assigned, key="only_mine")
with plain_errors("Could not read the queue"):
    overview = project.overview(me or None, mine_only=mine_only)
if overview.empty:
    st.warning(f"No items are assigned to {me}: untick 'Only my items' to see the whole queue.")
    st.stop()
n_items = len(overview)
done = (overview["state"] != "to review").to_numpy()
n_done = int(done.sum())
st.progress(n_done / n_items, text=f"{n_done} of {n_items} records reviewed")
if n_done == n_items:
    whose = "of yours " if mine_only else ""
    st.success(f"All done: every item {whose}in the queue is reviewed.", icon=":material/task_alt:")
    c1, c2 = st.columns(2)
    c1.page_link("views/agreement.py", label="Agreement of double review")
    c2.page_link("views/estimates.py", label="Estimates")

if me:
    recent = project.recent(me, 3)
    if recent:
        item_of = dict(zip(overview["record"].map(repr), overview["item"], strict=True))
        st.caption(
            "Your latest saves: "
            + "; ".join(
                f"item {item_of.get(repr(e.sampled_record), '?')} `{e.sampled_record}` "
                f"({e.status if e.status != 'undo' else 'undo'}) at {local_time(e.created_at)}"
                for e in recent
            )
        )

with st.expander("Queue overview", icon=":material/list:"):
    shown_overview = overview.assign(
        saved_at=overview["saved_at"].map(lambda t: local_time(t) if isinstance(t, str) else "")
    )
    st.dataframe(
        shown_overview,
        hide_index=True,
        key="queue_overview",
        column_config={"draft": st.column_config.CheckboxColumn("unsaved draft")},
    )
    counts = overview["state"].value_counts()
    st.caption(", ".join(f"{n} {state}" for state, n in counts.items()) + ".")

conflicts = project.conflicts()
if len(conflicts) and me:
    blind_items = {repr(r) for r in overview["record"] if project.blind(r, me)}
    conflicts = conflicts[~conflicts["sampled_record"].map(repr).isin(blind_items)]
if len(conflicts):
    with st.expander(f"{len(conflicts)} conflicting decision(s)", icon=":material/warning:"):
        st.caption(
            "merged_back: a record removed from a sampled record's cluster by one decision is "
            "put back by another decision's true cluster. reviewers_disagree: two reviewers "
            "decided the same record differently and neither saw the other's decision. "
            "Settle them on the Adjudication page."
        )
        st.dataframe(conflicts, hide_index=True, key="conflicts")

position = st.session_state.get("queue_position")
if position is None:
    position = next_to_review(done, -1)
position = min(max(int(position), 0), n_items - 1)

nav = st.columns([1, 1, 1.5, 2.5])
if nav[0].button("◀ Previous", key="nav_prev", disabled=position == 0, shortcut=SHORTCUTS["prev"]):
    position -= 1
if nav[1].button(
    "Next ▶", key="nav_next", disabled=position >= n_items - 1, shortcut=SHORTCUTS["next"]
):
    position += 1
if nav[2].button(
    "Next unreviewed",
    key="nav_next_unreviewed",
    icon=":material/skip_next:",
    disabled=n_done == n_items,
):
    position = next_to_review(done, position)
st.session_state["goto"] = position + 1


def records_phrase(n: int) -> str:
    """``n`` records, in the singular for one."""
    return f"{n:,} record{'' if n == 1 else 's'}"


def jump() -> None:
    st.session_state["queue_position"] = int(st.session_state["goto"]) - 1


nav[3].number_input("Go to item", min_value=1, max_value=n_items, key="goto", on_change=jump)
st.session_state["queue_position"] = position

item = overview.iloc[position]
record = item["record"]
alone = bool(me) and project.blind(record, me)
state = "to review (double review)" if alone and item["state"] == "to review" else item["state"]
st.subheader(f"Item {position + 1} of {n_items}: `{record}` — {state}")


def forget_item(key) -> None:
    """Drop the item's widget state and pinned decision so it is drawn again from the store."""
    for name in ("cluster", "added", "notes", "conflict", "basis", "ticks", "grid_v", "restored"):
        st.session_state.pop(f"{name}_{key}", None)
    for name in [k for k in st.session_state if str(k).startswith(f"cluster_{key}_")]:
        st.session_state.pop(name, None)
    st.session_state.pop(f"kept_{key}", None)


# The decision this page shows is pinned when the item is opened: edits and saves are
# based on it, even if someone saves a newer decision while the page is open (the save is
# then refused and the conflict view shows both, instead of silently mixing them). A draft
# kept from an earlier visit is restored with the decision it was started from.
if st.session_state.get("shown_item") != record or f"basis_{record}" not in st.session_state:
    forget_item(record)
    shown_now = project.decision(record, me or None)
    draft = project.draft(me, record) if me else None
    if draft is not None:
        earlier = {e.event_id: e for e in project.history(record)}
        st.session_state[f"basis_{record}"] = earlier.get(draft.based_on)
        st.session_state[f"ticks_{record}"] = list(draft.removed)
        st.session_state[f"added_{record}"] = list(draft.added)
        st.session_state[f"notes_{record}"] = draft.notes
        st.session_state[f"restored_{record}"] = draft.updated_at
    else:
        st.session_state[f"basis_{record}"] = shown_now
st.session_state["shown_item"] = record
shown: ReviewEvent | None = st.session_state[f"basis_{record}"]
latest = project.decision(record, me or None)
if (latest and latest.event_id) != (shown and shown.event_id):
    what = "a decision was undone" if latest is None else f"{latest.reviewer} saved a new decision"
    st.warning(f"Since you opened this item, {what}: saving will show both so you can choose.")
if st.session_state.get(f"restored_{record}"):
    st.info(
        f"Restored your unsaved edit of this item from "
        f"{local_time(st.session_state[f'restored_{record}'])}: it is not saved yet.",
        icon=":material/restore:",
    )
if alone:
    st.caption("Double review: you see and replace only your own decision on this record.")
if shown is not None:
    who = "you" if alone or shown.reviewer == me else shown.reviewer
    role = "adjudicated" if shown.role == "adjudication" else shown.status
    st.caption(
        f"Current decision ({role}) saved by {who} at {local_time(shown.created_at)}: "
        f"removed {list(shown.removed)}, added {list(shown.added)}. "
        "Saving again replaces it; the history is kept."
    )

cluster_id, members_list = project.members(record)
members = pd.Index(members_list)
if cluster_id is None:
    where_text = "this version" if blind_mode else f"version {version}"
    st.warning(f"`{record}` is not in {where_text}: starting from a singleton.")
where = "a predicted cluster" if blind_mode else f"version **{version}**, cluster `{cluster_id}`"
st.markdown(f"Predicted cluster of the sampled record ({where}): {records_phrase(len(members))}.")

ticks_key, version_key = f"ticks_{record}", f"grid_v_{record}"
if ticks_key not in st.session_state:
    st.session_state[ticks_key] = list(shown.removed) if shown is not None else []
added_key = f"added_{record}"
if added_key not in st.session_state:
    st.session_state[added_key] = list(shown.added) if shown is not None else []
notes_key = f"notes_{record}"
if notes_key not in st.session_state:
    st.session_state[notes_key] = shown.notes if shown is not None else ""


def grid_key(key) -> str:
    v = st.session_state.get(f"grid_v_{key}", 0)
    return f"cluster_{key}" if v == 0 else f"cluster_{key}_{v}"


def ticked(key, rows: pd.Index) -> list:
    """Records ticked in ``key``'s grid now: the ticks it opened with, changed by the edits
    in its widget state (read in callbacks, before the page is drawn again)."""
    ticks = rows.isin(st.session_state.get(f"ticks_{key}", []))
    state = st.session_state.get(grid_key(key)) or {}
    for index, change in (state.get("edited_rows") or {}).items():
        if TICK in change:
            ticks[int(index)] = bool(change[TICK])
    return list(rows[ticks])


def set_ticks(key, rows: pd.Index, ticks: list) -> None:
    """Replace the grid's ticks (a bulk tick, rows typed by number, a merge): the grid is
    drawn anew with them."""
    st.session_state[f"ticks_{key}"] = [r for r in rows if r in set(ticks)]
    st.session_state[f"grid_v_{key}"] = st.session_state.get(f"grid_v_{key}", 0) + 1


def decision_of(event: ReviewEvent | None, fallback: dict) -> dict:
    if event is None:
        return fallback
    return {"removed": list(event.removed), "added": list(event.added), "notes": event.notes}


def save(key, cluster, rows: list, based_on, correct: bool, move_to: int) -> None:
    """Save the decision on ``key`` as it stands in its widgets, bound to ``based_on``."""
    who = reviewer_name()
    if not who:
        st.session_state["flash_error"] = "Not saved: choose your name as reviewer first."
        return
    if st.session_state.get("shown_item") != key:
        st.session_state["flash_error"] = (
            f"Not saved: the press was for {key!r}, which is no longer on the page."
        )
        return
    # A double press: the first saves an item and brings up the next, the second lands on
    # the next item's button before anyone could have looked at it. The time counts from
    # the end of the run that drew the item (when it is on screen), not from the save: on
    # a busy server drawing the next item alone can take longer than the guard.
    saved, saved_at = st.session_state.get("last_save", (None, -math.inf))
    drawn, drawn_at = st.session_state.get("drawn", (None, math.inf))
    on_screen = time.monotonic() - drawn_at if drawn == key else 0.0
    after_save = drawn != key or drawn_at >= saved_at
    if saved not in (None, key) and after_save and on_screen < min_dwell_seconds():
        st.session_state["flash_error"] = (
            f"Not saved: {key!r} came up after saving {saved!r} and this press came "
            f"{on_screen:.1f} s after it was shown, before it could be looked at; press "
            "again to save it."
        )
        return
    mine = {
        "removed": [] if correct else ticked(key, pd.Index(rows)),
        "added": [] if correct else list(st.session_state.get(f"added_{key}", [])),
        "notes": st.session_state.get(f"notes_{key}", ""),
    }
    try:
        project.save(who, key, **mine, based_on=based_on)
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
            st.session_state["flash"] = f"Already saved: {key}."
            return
        st.session_state[f"conflict_{key}"] = {
            "mine": mine,
            "theirs": None if now is None else now.event_id,
        }
        return
    except ReviewError as err:
        st.session_state["flash_error"] = f"Not saved: {err}"
        return
    forget_item(key)
    st.session_state["queue_position"] = move_to
    st.session_state["last_saved"] = key  # for the toast, which pops it
    st.session_state["last_save"] = (key, time.monotonic())


def resolve(key, rows, mine: dict, theirs: ReviewEvent | None, how: str) -> None:
    """Settle a refused save (see the module docstring): ``"both"`` keeps both decisions
    as made, ``"mine"`` saves this one over a decision of the same reviewer (another tab)
    or over an undone one, ``"theirs"`` drops this one, ``"merge"`` loads a new decision
    starting from both into the item, for the reviewer to check and save."""
    who = reviewer_name()
    draft = Draft(tuple(mine["removed"]), tuple(mine["added"]), mine["notes"])
    st.session_state.pop(f"conflict_{key}", None)
    try:
        if how == "theirs":
            project.drafts.discard(who, key)
            forget_item(key)
            st.session_state["flash"] = f"Kept the saved decision on {key}; yours was dropped."
            return
        if how == "merge":
            start = project.merge(draft, theirs)
            st.session_state[f"basis_{key}"] = theirs
            set_ticks(key, pd.Index(rows), list(start.removed))
            st.session_state[f"added_{key}"] = list(start.added)
            st.session_state[f"notes_{key}"] = start.notes
            st.session_state["flash"] = (
                f"A new decision starting from both is loaded for {key}: check every tick, "
                "then save it (nothing is saved until you do)."
            )
            return
        if how == "both":
            project.keep_both(who, key, draft)
            st.session_state["flash"] = (
                f"Both decisions on {key} are kept as made; the record waits for adjudication."
            )
        else:
            project.save(who, key, **mine, based_on=None if theirs is None else theirs.event_id)
            st.session_state["flash"] = f"Saved your decision on {key}."
    except ReviewError as err:
        st.session_state["flash_error"] = f"Not saved: {err}"
        return
    forget_item(key)


def marks(removed: set, added: set, records: list) -> list[str]:
    return ["✗ removed" if r in removed else "+ added" if r in added else "" for r in records]


conflict = st.session_state.get(f"conflict_{record}")
if conflict is not None:
    theirs = None
    if conflict["theirs"] is not None:
        theirs = next(e for e in project.history(record) if e.event_id == conflict["theirs"])
    mine = conflict["mine"]
    st.error(
        "Not saved: this record's decision changed since your page showed it. Both "
        "decisions are below, record by record; choose what happens to yours."
    )
    if theirs is None:
        st.caption("The decision you saw has been undone: none is in force now.")
    else:
        st.caption(
            f"Saved meanwhile by {theirs.reviewer} at {local_time(theirs.created_at)}"
            + (f"; notes: {theirs.notes}" if theirs.notes else "")
            + (f". Your notes: {mine['notes']}" if mine["notes"] else "")
        )
    other = decision_of(theirs, {"removed": [], "added": [], "notes": ""})
    extra = [r for r in dict.fromkeys([*mine["added"], *other["added"]]) if r not in set(members)]
    rows_both = [*members, *extra]
    both = data.records.loc[rows_both, data.fields].astype(object).copy()
    both.insert(0, "yours", marks(set(mine["removed"]), set(mine["added"]), rows_both))
    theirs_label = "theirs" if theirs is None else theirs.reviewer
    both.insert(1, theirs_label, marks(set(other["removed"]), set(other["added"]), rows_both))
    both.insert(2, "record", [f"{SAMPLED_MARK}{r}" if r == record else str(r) for r in rows_both])
    differ = both["yours"] != both[theirs_label]
    st.dataframe(
        both.style.apply(
            lambda col: np.where(differ, HIGHLIGHT, ""), subset=["yours", theirs_label]
        ),
        hide_index=True,
        key=f"conflict_table_{record}",
        height=min(500, 40 + 35 * len(both)),
    )
    args = (record, list(members), mine, theirs)
    c1, c2, c3 = st.columns(3)
    if theirs is not None and theirs.reviewer != me:
        c1.button(
            "Keep both (adjudication decides)",
            key=f"keep_both_{record}",
            on_click=resolve,
            args=(*args, "both"),
            type="primary",
            help="Your decision is saved beside theirs, not over it; the record waits on the "
            "Adjudication page.",
        )
    else:
        c1.button(
            "Keep mine",
            key=f"keep_mine_{record}",
            on_click=resolve,
            args=(*args, "mine"),
            type="primary",
            help="Save this page's decision over the one saved meanwhile (yours, from another "
            "tab, or an undone one).",
        )
    c2.button(
        "Drop mine, keep theirs",
        key=f"keep_theirs_{record}",
        on_click=resolve,
        args=(*args, "theirs"),
    )
    c3.button(
        "Merge both into a new decision…",
        key=f"merge_{record}",
        on_click=resolve,
        args=(*args, "merge"),
        disabled=theirs is None,
        help="Loads every tick and addition of both into this item for you to check; "
        "nothing is saved until you press Save review.",
    )

# ------------------------------------------------------------------ the grid

fields = list(data.fields)
highlight = st.toggle(
    "Highlight values that differ from the sampled record's",
    value=True,
    key="highlight",
    help="Case, accents and spaces ignored; empty values never count as different.",
)
others = [r for r in members if r != record]
flags = pd.DataFrame(False, index=pd.Index(members, dtype=object), columns=fields)
if highlight and others:
    flags.loc[others] = differing_fields(data.records, record, others, fields).to_numpy()
# Narrow columns for short values, so the wide fields (titles, assignees, coinventors)
# are a short scroll away; the row number, tick, mark and record stay pinned on the left.
typical = data.records.loc[members, fields].astype(str).apply(lambda c: c.str.len().median())
column_config = {
    ROW: st.column_config.NumberColumn(ROW, width=40, pinned=True),
    TICK: st.column_config.CheckboxColumn(
        TICK,
        help="Tick records of another person (Space on a selected cell)",
        width=110,
        pinned=True,
    ),
    SAMPLED: st.column_config.TextColumn("★", width=30, pinned=True),
    "record": st.column_config.Column("record", width=130, pinned=True),
    **{
        f: st.column_config.Column(f, width="small" if typical[f] <= 12 else "medium")
        for f in fields
    },
}
pinned = data.records.loc[[record], fields].astype(object)
pinned.insert(0, "record", [f"{SAMPLED_MARK}{record} (sampled)"])
st.dataframe(
    pinned.style.apply(lambda _: np.full(pinned.shape, SAMPLED_ROW, dtype=object), axis=None),
    hide_index=True,
    key=f"pinned_{record}",
    column_config={"record": st.column_config.TextColumn("sampled record", pinned=True)},
)
table = data.records.loc[members, fields].astype(object).copy()
table.insert(0, ROW, np.arange(1, len(table) + 1))
table.insert(1, TICK, table.index.isin(st.session_state[ticks_key]))
table.insert(2, SAMPLED, np.where(np.asarray(members) == record, "★", ""))
table.insert(3, "record", table.index)
flag_cells = flags.to_numpy()
sampled_row = np.asarray(members) == record


def style(frame: pd.DataFrame) -> np.ndarray:
    cells = np.where(flag_cells, HIGHLIGHT, "").astype(object)
    cells[sampled_row] = SAMPLED_ROW
    out = np.full(frame.shape, "", dtype=object)
    out[:, 4:] = cells
    out[sampled_row, 2:4] = SAMPLED_ROW
    return out


edited = st.data_editor(
    table.style.apply(style, axis=None),
    hide_index=True,
    disabled=[c for c in table.columns if c != TICK],
    column_config=column_config,
    key=grid_key(record),
    height=min(600, 40 + 35 * len(table)),
)
removed = [m for m, t in zip(members, edited[TICK].to_numpy(), strict=True) if t]
st.caption(f"{len(removed)} of {len(members)} records ticked as not belonging.")


def tick_rows(key, rows: list) -> None:
    """Tick (or, with a leading "-", untick) the rows typed by number: "2 5-7", "-3"."""
    text = st.session_state.get(f"tick_rows_{key}", "")
    st.session_state[f"tick_rows_{key}"] = ""
    now = set(ticked(key, pd.Index(rows)))
    for token in re.split(r"[\s,;]+", text.strip()):
        if not token:
            continue
        untick = token.startswith("-")
        span = token.lstrip("-")
        try:
            first, _, last = span.partition("-")
            numbers = range(int(first), int(last or first) + 1)
        except ValueError:
            st.session_state["flash_error"] = f"Not a row number or range: {token!r}."
            return
        for number in numbers:
            if not 1 <= number <= len(rows):
                st.session_state["flash_error"] = f"No row {number}: rows are 1 to {len(rows)}."
                return
            (now.discard if untick else now.add)(rows[number - 1])
    set_ticks(key, pd.Index(rows), list(now))


st.text_input(
    "Tick rows",
    key=f"tick_rows_{record}",
    placeholder="row numbers, e.g. 2 5-7 (-3 unticks); Enter applies",
    on_change=tick_rows,
    args=(record, list(members)),
    help="Keyboard ticking: Alt+T comes here.",
)

if len(members) >= VARIANTS_FROM:
    with st.expander("Variants in this cluster", expanded=len(members) >= 3 * VARIANTS_FROM):
        variants = field_variants(data.records, members, fields)
        counts = variants.groupby("field", sort=False)["value"].size()
        st.caption(
            "Distinct values of each field (case, accents and spaces ignored): "
            + ", ".join(f"{f} {n}" for f, n in counts.items())
            + ". Tick every record of one value at once."
        )
        v1, v2 = st.columns([1, 2])
        field = v1.selectbox("Field", fields, key=f"variant_field_{record}")
        of_field = variants[variants["field"] == field].reset_index(drop=True)
        st.dataframe(
            of_field[["value", "records"]], hide_index=True, key=f"variants_{record}_{field}"
        )
        choice = v2.selectbox(
            "Value",
            range(len(of_field)),
            format_func=lambda i: (
                f"{of_field['value'][i] or '(empty)'} — {records_phrase(of_field['records'][i])}"
            ),
            key=f"variant_value_{record}_{field}",
        )
        chosen = list(of_field["ids"][choice]) if choice is not None else []
        b1, b2 = st.columns(2)
        b1.button(
            f"Tick these {records_phrase(len(chosen))}",
            key=f"variant_tick_{record}",
            on_click=lambda: set_ticks(
                record,
                pd.Index(members_list),
                [*ticked(record, pd.Index(members_list)), *[c for c in chosen if c != record]],
            ),
        )
        b2.button(
            f"Untick these {records_phrase(len(chosen))}",
            key=f"variant_untick_{record}",
            on_click=lambda: set_ticks(
                record,
                pd.Index(members_list),
                [t for t in ticked(record, pd.Index(members_list)) if t not in set(chosen)],
            ),
        )

added: list = st.session_state[added_key]
with st.expander("Search all records to add missing ones", expanded=bool(added)):
    c1, c2, c3 = st.columns([3, 2, 1])
    query = c1.text_input("Search", key="search_query", placeholder="name, city, assignee, id… (/)")
    field = c2.selectbox("In field", ["any field", *fields], key="search_field")
    same_block = c3.checkbox(
        "Same block",
        value=data.block_col is not None,
        key="search_block",
        disabled=data.block_col is None,
    )
    block = data.records.loc[record, data.block_col] if same_block and data.block_col else None
    if block is not None:
        st.caption(f"Searching block `{block}` only; untick Same block to search every record.")
    if query.strip():
        index = record_index(data)
        with plain_errors("Search failed"):
            hits = index.search(
                query, fields=None if field == "any field" else [field], block=block, limit=50
            )
        hits = hits[~hits.index.isin(members) & ~hits.index.isin(added)]
        if hits.empty:
            where_searched = f"in block `{block}`" if block is not None else "among all records"
            st.caption(
                f"No other records {where_searched} match {query.strip()!r}"
                + (" (the search was limited to this block)." if block is not None else ".")
            )
        else:
            found = data.records.loc[hits.index, fields].copy()
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
            data.records.loc[added, fields].reset_index(names="record"),
            hide_index=True,
            key=f"added_table_{record}",
        )
        if st.button("Clear added records", key="clear_added"):
            st.session_state[added_key] = []
            st.rerun()

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
after = next_to_review(done | (np.arange(n_items) == position), position)
common = (record, cluster_id, list(members), based_on)
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
    help="Save the ticks, additions and notes (Ctrl+Enter); with nothing ticked or added it "
    "is the same decision as Correct as is",
)


def undo(key, event_id: int | None, confirm: bool) -> None:
    try:
        project.undo(reviewer_name(), key, event_id=event_id, confirm_other=confirm)
    except ReviewError as err:
        st.session_state["flash_error"] = f"Undo failed: {err}"
        return
    forget_item(key)
    st.session_state["flash"] = f"Undid a save on {key}."


history = project.history(record)
undone = {e.undoes for e in history if e.status == "undo"}
live = [e for e in history if e.status != "undo" and e.event_id not in undone]
my_live = [e for e in live if e.reviewer == me and e.event_id > project.after]
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
    "Keys: "
    + ", ".join(f"{k} {v}" for k, v in SHORTCUTS.items())
    + ", / search, Alt+T tick rows by number; in the grid, arrows move and Space ticks "
    "(Ctrl is ⌘ on a Mac)."
)
st.html(KEYS_SCRIPT, unsafe_allow_javascript=True)
# The item and its buttons are drawn (the panels below open collapsed): from here on the
# item is on screen, and the double-press guard in save() counts from now.
if st.session_state.get("drawn", (None,))[0] != record:
    st.session_state["drawn"] = (record, time.monotonic())

# Unsaved ticks, additions and notes are kept as a draft (a reload or a restart then
# restores them); a draft equal to the decision shown is forgotten.
if me and conflict is None:
    draft = Draft(tuple(removed), tuple(added), st.session_state.get(notes_key, ""), based_on)
    if st.session_state.get(f"kept_{record}") != draft:
        try:
            project.keep_draft(me, record, draft)
            st.session_state[f"kept_{record}"] = draft
        except ReviewError as err:
            st.caption(f"Unsaved edits cannot be kept here: {err}")

with st.expander(f"History of this item ({len(history)} events)", icon=":material/history:"):
    if not history:
        st.caption("Nothing saved on this record yet.")
    for event in history:
        before = " — before this sample (does not count)" if event.event_id <= project.after else ""
        if event.status == "undo":
            what = f"undid event {event.undoes}"
        else:
            what = (
                f"{'adjudicated' if event.role == 'adjudication' else event.status}: removed "
                f"{list(event.removed)}, added {list(event.added)}"
                + (f"; notes: {event.notes}" if event.notes else "")
                + (f"; based on event {event.based_on}" if event.based_on else "")
                + (" (undone)" if event.event_id in undone else "")
            )
        st.markdown(
            f"- event {event.event_id}, {local_time(event.created_at)}, "
            f"**{event.reviewer}**: {what}{before}"
        )

with st.expander("Export the reviewed benchmark / import a review sheet"):
    st.caption(
        "The benchmark the estimates use: the reviewed true clusters of the sample's finished "
        "units, as a membership file (`record_id, cluster_id`), with the sample's design "
        "beside it (`benchmark.sample.json`), so `er-eval estimate --reference "
        "benchmark.csv` gives the same numbers as the Estimates page."
    )
    with plain_errors("Could not build the reviewed sample"):
        sample, n_units = project.sample()
    if st.button("Export to the project folder", key="export_benchmark", disabled=sample is None):
        with plain_errors("Export failed"):
            path, design = project.export(project_dir() / "benchmark.csv")
        st.success(
            f"Exported {sample.n_records:,} records of {n_units:,} finished units"
            f"{distinct_units_note(n_units, sample.n_units)} "
            f"to `{path}` "
            f"and the design to `{design.name}`."
        )
    if sample is not None:
        st.download_button(
            "Download benchmark.csv",
            sample.reference.rename_axis("record_id").rename("cluster_id").to_csv(),
            file_name="benchmark.csv",
            key="download_benchmark",
        )
    sheet = st.file_uploader(
        "Import an add/remove sheet (columns sampled_record, remove, add; optional "
        "status — correct or skipped where nothing is removed or added —, predicted_cluster, "
        "cluster_records, reviewer, notes; er-eval review sheet writes one)",
        type=["csv", "tsv", "parquet"],
        key="import_sheet",
    )
    if sheet is not None and st.button("Import sheet", key="import_sheet_go", disabled=not me):
        try:
            kept = keep_input(sheet.getvalue(), sheet.name, project_dir())
            try:
                frame = read_sheet(kept)
            except (ValueError, OSError) as err:
                raise ReviewError(str(err).replace(str(kept.parent) + "/", "")) from err
            events = project.import_sheet(frame, reviewer=me)
        except (ReviewError, ValueError, OSError) as err:
            show_error(f"Not imported ({sheet.name})", err)
        else:
            st.session_state["flash"] = f"Imported {len(events)} reviews from {sheet.name}."
            st.rerun()
