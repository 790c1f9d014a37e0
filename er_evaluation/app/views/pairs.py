"""Pair labelling: label the record pairs an adaptive sampler (OASIS, or Marchant & Rubinstein 2021's AIS)
draws inside a block; running estimates and, for importance samplers, the estimated
precision-recall curve of the similarity score."""

from __future__ import annotations

import math
import time
import warnings

import pandas as pd
import streamlit as st

from er_evaluation.app.app_common import (
    data_key,
    load_project,
    min_dwell_seconds,
    plain_errors,
    project_dir,
)
from er_evaluation.pairs import (
    LabellingSession,
    PairPool,
    block_sizes,
    estimate_measure,
    interval_widths,
    labelling_pool,
    pool_size_problem,
    pr_curve,
    pr_curve_table,
    split_blocks,
)
from er_evaluation.plots import plot_pr_curve
from er_evaluation.review import differing_fields

st.title("Pair labelling")
data = load_project()
if data.block_col is None:
    st.info("Pair labelling draws pairs inside blocks: map a block column on the Project page.")
    st.stop()

c1, c2, c3 = st.columns(3)
version = c1.selectbox("Version", data.versions, index=len(data.versions) - 1, key="pairs_version")
prediction = data.predictions[version]


def _members() -> pd.DataFrame:
    """The version's records that have a block key."""
    members = data.records.loc[prediction.index]
    return members[members[data.block_col].notna().to_numpy()]


@st.cache_resource(max_entries=8)
def sizes_of(key: str, version: str) -> tuple[pd.DataFrame, int]:
    """Records and pairs per block (counted once per version, not on every answer), and
    how many of the version's records have no block key."""
    blocked = _members()
    return block_sizes(blocked, data.block_col), len(prediction) - len(blocked)


with plain_errors("Could not count the blocks"):
    sizes, unkeyed = sizes_of(data_key(data), version)
# the library decides which blocks are too large to label in memory (a pair-count limit)
allowed = sizes[~sizes["too_large"] & (sizes["pairs"] > 0)]
# A block of a few hundred records: tens of thousands of pairs, enough to need sampling.
mid = allowed.index[allowed["records"].between(100, 400)]
default = (list(mid) or list(allowed.index) or list(sizes.index))[0]


def _labels(sizes: pd.DataFrame) -> dict:
    """Each block's entry in a block list: its records and pairs, and whether it is too large."""
    mark = sizes["too_large"].map({True: " — too large to label", False: ""})
    counts = zip(sizes.index, sizes["records"], sizes["pairs"], mark, strict=True)
    return {b: f"{b} ({n:,} records, {p:,} pairs){m}" for b, n, p, m in counts}


labels = _labels(sizes)
block = c2.selectbox(
    "Block",
    list(sizes.index),
    index=list(sizes.index).index(default),
    format_func=labels.get,
    key="pairs_block",
)
method = c3.selectbox(
    "Sampler",
    ["oasis", "ais", "passive", "stratified", "importance"],
    format_func=lambda m: "ais (Marchant & Rubinstein 2021)" if m == "ais" else m,
    key="pairs_method",
)


if unkeyed:
    st.caption(
        f"{unkeyed:,} records of version {version} have no {data.block_col!r} value and are "
        "in no block."
    )
SUB_BLOCK = "__sub_block__"  # the refined key's column in a copy of the block's records


def _split(block: str, by: str) -> pd.DataFrame:
    """The block's records with their sub-block key (the library's split_blocks)."""
    members = _members()
    inside = members[(members[data.block_col] == block).to_numpy()]
    return inside.assign(**{SUB_BLOCK: split_blocks(inside, data.block_col, by)})


split, whole = None, block
if problem := pool_size_problem(
    sizes,
    [block],
    remedy="Choose a field below to split it by (pairs of its records that also agree on "
    "that field), or choose a smaller block.",
):
    # too large to pair whole: refuse it, or label one sub-block split by another field
    split = st.selectbox(
        "Split this block by",
        [None, *data.fields],
        format_func=lambda f: "(choose a field)" if f is None else f,
        key="pairs_split",
    )
    if split is None:
        st.error(f"Cannot label this block: {problem}")
        st.stop()
    with plain_errors("Could not split the block"):
        sub_sizes = block_sizes(_split(block, split), SUB_BLOCK)
    sub_labels = _labels(sub_sizes)
    usable = sub_sizes.index[~sub_sizes["too_large"] & (sub_sizes["pairs"] > 0)]
    sub = st.selectbox(
        "Sub-block",
        list(sub_sizes.index),
        index=list(sub_sizes.index).index(usable[0] if len(usable) else sub_sizes.index[0]),
        format_func=sub_labels.get,
        key="pairs_sub_block",
    )
    st.warning(
        f"Block {block} is too large to label whole; this is its sub-block of records that "
        f"also share the same {split}: the pool leaves out the pairs across sub-blocks."
    )
    if problem := pool_size_problem(
        sub_sizes, [sub], remedy="Choose another field to split by, or another sub-block."
    ):
        st.error(f"Cannot label this sub-block: {problem}")
        st.stop()
    block = sub


@st.cache_resource(show_spinner="Building the pair pool…", max_entries=8)
def pool_of(key: str, version: str, whole: str, split: str | None, block: str) -> PairPool:
    if split is None:
        records, column = _members(), data.block_col
    else:
        records, column = _split(whole, split), SUB_BLOCK
    return labelling_pool(records, column, [block], fields=data.fields, prediction=prediction)


with plain_errors("Could not build the pair pool"):
    pool = pool_of(data_key(data), version, whole, split, block)
# a sub-block's log names the field it was split by (two fields may share a value); a
# block key may hold ':' or '/' (a sub-block's separator): neither belongs in a file name
named = block if split is None else f"{block} by {split}"
name = f"{version}__{named}__{method}.jsonl".replace(":", "_").replace("/", "_")
log = project_dir() / "pairs" / name
sessions = st.session_state.setdefault("pair_sessions", {})
if str(log) not in sessions:
    with plain_errors("Could not open the label log"):
        sessions[str(log)] = LabellingSession(pool, log, method=method, seed=0)
session: LabellingSession = sessions[str(log)]
st.caption(
    f"{pool.n_pairs:,} candidate pairs in the block; {session.n_labels} labelled, "
    f"{session.n_unsure} unsure. Labels are saved to `{log.name}` as you answer; other "
    "tabs or reviewers on this block and sampler share the log."
)


def _answer(session: LabellingSession, answer, shown) -> None:
    # A double press: the first answers a pair and brings up the next, the second lands
    # on the next pair's button before anyone could have looked at it (the review page's
    # rule, min_dwell_seconds). The time counts from the end of the run that drew the pair.
    answered_at = st.session_state.get("pairs_last_answer", -math.inf)
    drawn, drawn_at = st.session_state.get("pairs_drawn", (None, math.inf))
    on_page = drawn == (str(session.path), shown.step)
    on_screen = time.monotonic() - drawn_at if on_page else 0.0
    after_answer = not on_page or drawn_at >= answered_at
    if answered_at > -math.inf and after_answer and on_screen < min_dwell_seconds():
        st.session_state["pairs_notice"] = (
            f"Not saved: {shown.id_left} / {shown.id_right} came up after your last answer and "
            f"this press came {on_screen:.1f} s after it was shown, before it could be looked "
            "at; press again to answer it."
        )
        return
    with plain_errors("Could not save the answer"):
        if not session.answer(answer, index=shown.index):
            st.session_state["pairs_notice"] = (
                f"{shown.id_left} / {shown.id_right} was already answered in another session "
                "on this log; that first answer is kept."
            )
    st.session_state["pairs_last_answer"] = time.monotonic()


pending = session.next_pair()
if pending is None:
    st.success("Every pair the sampler can draw is labelled.")
else:
    st.subheader(f"Pair {session.n_draws + session.n_unsure + 1}: same person?")
    side = data.records.loc[[pending.id_left, pending.id_right], data.fields].T
    side.columns = pd.Index([f"left: {pending.id_left}", f"right: {pending.id_right}"])
    # each field's agreement, compared as a reviewer would (case, accents, spaces ignored)
    differs = differing_fields(data.records, pending.id_left, [pending.id_right], data.fields)
    empty = side.isna().any(axis=1) | (side.astype(str).apply(lambda c: c.str.strip()) == "").any(
        axis=1
    )
    side.insert(
        0,
        "fields",
        [
            "" if e else "✗ differ" if d else "✓ agree"
            for e, d in zip(empty, differs.iloc[0], strict=True)
        ],
    )
    st.dataframe(side.astype(str), key="pairs_side")
    st.caption(f"Similarity score {pending.score:.3f}")
    # the pair is on screen from here on (before its buttons exist, so that a run cut short
    # by a press still counts it): the double-press guard of _answer counts from now
    if st.session_state.get("pairs_drawn", (None,))[0] != (str(log), pending.step):
        st.session_state["pairs_drawn"] = ((str(log), pending.step), time.monotonic())
    b1, b2, b3 = st.columns(3)
    for column, label, answer, keys in (
        (b1, "Match", 1, "Alt+M"),
        (b2, "Non-match", 0, "Alt+N"),
        (b3, "Unsure", None, "Alt+U"),
    ):
        # a callback, bound to the pair on screen: it runs before the page re-runs, and an
        # answer to a pair another tab or reviewer answered first is not recorded
        column.button(
            label,
            key=f"pairs_{label.lower()}",
            on_click=_answer,
            args=(session, answer, pending),
            shortcut=keys,
        )
if notice := st.session_state.pop("pairs_notice", None):
    st.info(notice)

target = st.number_input(
    "Target interval width (optional)",
    min_value=0.0,
    max_value=1.0,
    value=0.0,
    step=0.01,
    key="pairs_target_width",
    help="After each answer the page shows each interval's width; with a target it says "
    "when every interval is at most that wide and every estimate reliable. An interval "
    "holds its level at a budget fixed in advance, not at a stop chosen by its width.",
)
if session.n_labels >= 2:
    with plain_errors("Could not estimate"):
        estimates = session.estimate()
        result = estimates.to_frame().set_index("metric")
        widths = interval_widths(estimates, target or None)
    st.subheader("Running estimate")
    cols = st.columns(len(result))
    for col, (metric, row) in zip(cols, result.iterrows(), strict=True):
        col.metric(metric, f"{row['value']:.3f}")
        col.caption(
            f"{row['level']:.0%} CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}] · "
            f"width {row['ci_high'] - row['ci_low']:.3f} · SE {row['std_error']:.3f}"
            + ("" if row["reliable"] else " · not reliable")
        )
    if widths.reached:
        st.success(f"Target width reached: {widths.describe()}.", icon="✅")
    else:
        st.caption(widths.describe())
    for metric, row in result[~result["reliable"].astype(bool)].iterrows():
        st.warning(f"{metric} is not reliable: {row['reason']}")
    st.dataframe(result, key="pairs_estimates")

if session.n_labels >= 2 and session.sampler.design == "importance":
    st.subheader("Precision-recall curve of the similarity score")
    st.caption(
        "Precision and recall of 'score >= threshold' at 20 thresholds, estimated from the "
        "same labels, with pointwise intervals (Marchant & Rubinstein 2021, Example 1). Undefined points "
        "(no labelled pair above the threshold yet) are left out."
    )
    curve = pr_curve(pool.scores, 20)
    with plain_errors("Could not estimate the curve"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined points are shown as gaps
        table = pr_curve_table(curve, estimate_measure(session.label_run(), curve))
    if table[["precision", "recall"]].notna().all(axis=1).any():
        st.plotly_chart(plot_pr_curve(table), key="pairs_pr_curve")
    else:
        st.info("The curve appears once a labelled match is above some threshold.")
