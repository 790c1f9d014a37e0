"""Sample: choose the design, size, seed, starting version and reviewers; save the queue.

Drawing over saved decisions asks first: they either stay out of the new sample (kept in
the history) or count for it as they were made; a blind double review never counts
decisions made before it.
"""

from __future__ import annotations

import json

import streamlit as st

from er_evaluation._sample_file import drawn_design
from er_evaluation.app.app_common import open_project, plain_errors
from er_evaluation.designs import SIZE_BANDS
from er_evaluation.review import DESIGNS, RedrawError, ReviewError, SampleSettings

st.title("Sample what to review")
project = open_project()
data = project.data
with plain_errors("Could not read the sample settings"):
    current = project.settings

with st.expander("Recommended design: what to review for a budget of records", expanded=True):
    from er_evaluation.recommend import recommend_design
    from er_evaluation.sampling import benchmark_sample

    r1, r2, r3 = st.columns(3)
    budget = r1.number_input(
        "Records to read", min_value=10, value=2000, step=100, key="recommend_records"
    )
    focus = r2.selectbox(
        "Version", data.versions, index=len(data.versions) - 1, key="recommend_version"
    )
    second_wave = r3.checkbox(
        "Recall from the project's benchmark",
        value=data.benchmark is not None,
        disabled=data.benchmark is None,
        key="recommend_benchmark",
        help="A second wave: the benchmark gives recall, the whole budget goes to predicted "
        "clusters reviewed whole (precision).",
    )
    st.caption(
        "The largest predicted clusters reviewed whole, more predicted clusters drawn by size "
        "band and reviewed whole (precision), records drawn uniformly with their true "
        "clusters (recall): intervals that hold where a few giant clusters carry most links."
    )
    if st.button("Recommend", key="recommend_button"):
        prediction = data.predictions[focus]
        with plain_errors("Could not recommend a design"):
            benchmark = None
            if second_wave and data.benchmark is not None:
                bench = data.benchmark[data.benchmark.index.isin(prediction.index)]
                benchmark = benchmark_sample(bench, weights="cluster_size")
            recommended = recommend_design(prediction, records=int(budget), benchmark=benchmark)
            known = None if benchmark is None else benchmark.reference
            st.session_state["recommended"] = (recommended, recommended.draw(seed=0), known)
    if "recommended" in st.session_state:
        recommended, drawn, known = st.session_state["recommended"]
        st.text(recommended.summary())
        d1, d2 = st.columns(2)
        d1.download_button(
            "Download the records to review (CSV)",
            recommended.review_table(drawn, benchmark=known).to_csv(),
            file_name="records_to_review.csv",
            key="recommend_download",
            help="Fill in true_cluster for every row (and add a row for each record of a "
            "recall record's true cluster not listed).",
        )
        d2.download_button(
            "Download its design (records_to_review.sample.json)",
            json.dumps(drawn_design(recommended.drawn(drawn, benchmark=known)), indent=1),
            file_name="records_to_review.sample.json",
            key="recommend_download_design",
            help="Keep it beside the filled-in CSV: er-eval estimate PREDICTION --reference "
            "records_to_review.csv:record_id:true_cluster then gives this design's estimates.",
        )
    # the queue's reviewers and double review are chosen below; the draw happens there
    draw_recommended = st.button(
        "Draw this design into the review queue",
        key="recommend_draw",
        type="primary",
        disabled=second_wave,
        help="Draws the recommended design for these records to read and this version "
        "(seed 0, the draw shown above) into the review queue, split among the reviewers "
        "chosen below. Its recall part is its own record draw: untick 'Recall from the "
        "project's benchmark' to draw it."
        if not second_wave
        else "The review queue draws its own records for recall: untick 'Recall from the "
        "project's benchmark' to draw this design into it.",
    )

design = st.radio(
    "Design",
    list(DESIGNS),
    format_func=DESIGNS.get,
    index=list(DESIGNS).index(current.design) if current else 0,
    key="sample_design",
)
if design == "blocks" and data.block_col is None:
    st.error("The block design needs a block column: map one on the Project page.")
    st.stop()
c1, c2, c3 = st.columns(3)
size = c1.number_input(
    {
        "records": "Records to sample",
        "clusters": "Predicted clusters",
        "blocks": "Blocks",
        "stratified": "Records to sample (besides the take-all stratum)",
        "change": "Changed records to sample",
        "recommended": "Records to read (the budget)",
    }[design],
    min_value=1,
    value=current.size if current else 50,
    step=10,
    key="sample_size",
)
seed = c2.number_input("Seed", min_value=0, value=current.seed if current else 1, key="sample_seed")
versions = data.versions
version = c3.selectbox(
    "Start from version",
    versions,
    index=versions.index(current.version)
    if current and current.version in versions
    else len(versions) - 1,
    key="sample_version",
    help="Reviewers see this version's predicted cluster of each sampled record and correct it.",
)
extra: dict = {}
if design == "stratified":
    extra["take_all_size"] = int(
        st.number_input(
            "Review entirely the predicted clusters with at least this many records",
            min_value=2,
            value=(current.take_all_size if current and current.take_all_size else 50),
            key="sample_take_all",
            help="With heavy-tailed cluster sizes the few largest clusters carry most links "
            "and most errors: reviewing them entirely removes their sampling error. Other "
            f"records are stratified by predicted cluster size (bands from {SIZE_BANDS}).",
        )
    )
elif design == "change":
    others = [v for v in versions if v != version]
    if not others:
        st.error("The change design compares two versions: the project has only one.")
        st.stop()
    extra["other_version"] = st.selectbox(
        "Compare with version",
        others,
        index=len(others) - 1,
        key="sample_other_version",
        help="Only records whose predicted cluster differs between the two versions are "
        "sampled: elsewhere the versions agree and their difference is exactly zero.",
    )
roster = list(project.reviewers)
reviewers = st.multiselect(
    "Split among reviewers (none = one shared queue)",
    roster,
    default=[r for r in (current.reviewers if current else ()) if r in roster],
    key="sample_reviewers",
    help="The project's reviewers (add them on the Project page). Each unit goes whole to "
    "one of them.",
)
if not roster:
    st.caption("No reviewers yet: add them on the Project page to split the queue.")
double_share = st.number_input(
    "Share of units reviewed twice, blind (double review; needs two or more reviewers)",
    min_value=0.0,
    max_value=1.0,
    value=current.double_share if current else 0.0,
    step=0.05,
    key="sample_double_share",
    help="These units go to a second reviewer too; neither sees the other's decision. "
    "Agreement and adjudication pages compare and settle them.",
)


def form_settings() -> SampleSettings:
    """The sample design chosen in the form."""
    return SampleSettings(
        design=design,
        size=int(size),
        seed=int(seed),
        version=version,
        reviewers=tuple(reviewers),
        double_share=float(double_share),
        **extra,
    )


def recommended_settings() -> SampleSettings:
    """The recommended design of the expander above, with the reviewers of the form."""
    return SampleSettings(
        design="recommended",
        size=int(budget),
        seed=0,
        version=focus,
        reviewers=tuple(reviewers),
        double_share=float(double_share),
    )


def draw(settings_of, earlier: str | None) -> None:
    try:
        settings = settings_of()
        queue = project.draw(settings, earlier=earlier)
    except RedrawError as waiting:
        st.session_state["redraw_waiting"] = str(waiting)
        st.session_state["redraw_settings"] = settings.to_dict()
        st.rerun()
    except (ReviewError, ValueError) as err:
        st.session_state["sample_error"] = f"Could not draw the sample: {err}"
        return
    st.session_state.pop("redraw_waiting", None)
    st.session_state.pop("redraw_settings", None)
    st.session_state["queue_position"] = 0
    st.session_state["sample_flash"] = f"Saved a sample of {len(queue):,} records to review."
    st.rerun()  # the page below shows the new queue


def waiting_settings() -> SampleSettings:
    """The settings whose draw waits for the answer about earlier decisions."""
    stored = st.session_state.get("redraw_settings")
    return form_settings() if stored is None else SampleSettings.from_dict(stored)


if st.button("Draw and save the sample", key="draw_sample", type="primary"):
    draw(form_settings, None)
if draw_recommended:
    draw(recommended_settings, None)
if st.session_state.get("redraw_waiting"):
    st.warning(
        "The current sample has saved decisions: "
        + st.session_state["redraw_waiting"].split(": say whether", 1)[0]
        + ". What becomes of them in the new sample?",
        icon=":material/help:",
    )
    w1, w2, w3 = st.columns(3)
    if w1.button(
        "Start fresh: they do not count",
        key="redraw_exclude",
        help="The new sample counts only decisions saved from now on; the earlier ones stay "
        "in each item's history.",
    ):
        draw(waiting_settings, "exclude")
    if w2.button(
        "They count for the new sample",
        key="redraw_include",
        disabled=(st.session_state.get("redraw_settings") or {"double_share": double_share})[
            "double_share"
        ]
        > 0,
        help="Decisions made earlier count as done (not for a blind double review, which "
        "counts only decisions made blind for it).",
    ):
        draw(waiting_settings, "include")
    if w3.button("Keep the current sample", key="redraw_cancel"):
        st.session_state.pop("redraw_waiting", None)
        st.session_state.pop("redraw_settings", None)
        st.rerun()
for key, show in (("sample_flash", st.success), ("sample_error", st.error)):
    if st.session_state.get(key):
        show(st.session_state.pop(key))

with st.expander("Plan the sample size"):
    from er_evaluation.planning import PLAN_METRICS, default_design, plan_review
    from er_evaluation.sampling import benchmark_sample

    p1, p2, p3 = st.columns(3)
    target = p1.number_input(
        "Target half-width",
        min_value=0.001,
        max_value=0.5,
        value=0.02,
        step=0.005,
        format="%.3f",
        key="plan_half_width",
    )
    plan_metric = p2.selectbox("Metric", PLAN_METRICS, key="plan_metric")
    plan_take_all = p3.number_input(
        "Take-all from cluster size (predicted clusters)",
        min_value=2,
        value=50,
        key="plan_take_all",
    )
    plan_design = st.radio(
        "Design to plan",
        ["auto", "predicted_clusters", "records"],
        format_func={
            "auto": "the one that works for the metric",
            "predicted_clusters": "predicted clusters by size band (precision)",
            "records": "records drawn uniformly (recall, F1)",
        }.get,
        key="plan_design",
        horizontal=True,
        help="Precision is planned on whole predicted clusters, stratified by size with the "
        "largest reviewed entirely: on heavy-tailed cluster sizes the record design's "
        "precision variance is under-estimated. Recall and F1 need the true clusters: "
        "records drawn uniformly.",
    )
    sources = (["benchmark"] if data.benchmark is not None else []) + ["rate"]
    source = st.radio(
        "Stratum standard deviations from",
        sources,
        format_func={
            "benchmark": "the project's existing benchmark",
            "rate": "an assumed misattribution rate",
        }.get,
        key="plan_source",
        horizontal=True,
    )
    rate = None
    if source == "rate":
        rate = st.number_input(
            "Assumed misattribution rate", 0.001, 0.5, 0.05, step=0.01, key="plan_rate"
        )
    if st.button("Plan", key="plan_button"):
        prediction = data.predictions[version]
        with plain_errors("Could not plan"):
            design_name = default_design(plan_metric) if plan_design == "auto" else plan_design
            # the take-all size is one of the size bands, which only the predicted-cluster
            # design uses here (the record design is planned uniform)
            take_all_size = int(plan_take_all) if design_name == "predicted_clusters" else None
            pilot = None
            if source == "benchmark":
                # its records in this version's population (a version may lack some)
                bench = data.benchmark[data.benchmark.index.isin(prediction.index)]
                pilot = benchmark_sample(bench, weights="cluster_size")
            plan = plan_review(
                prediction,
                float(target),
                metric=plan_metric,
                design=design_name,
                take_all_size=take_all_size,
                pilot=pilot,
                error_rate=rate,
            )
            st.session_state["plan_result"] = plan
    plan = st.session_state.get("plan_result")
    if plan is not None:
        where = "" if plan.design == "predicted_clusters" else " in their true clusters"
        st.markdown(
            f"**{plan.n_draws:,} {plan.unit}** to review (~{plan.expected_records:,.0f} "
            f"records to read{where}) for a {plan.level:.0%} interval of {plan.metric} of "
            f"half-width {plan.half_width:.4f} (target {plan.target_half_width:.4f})."
        )
        for note in plan.warnings:
            st.warning(note)
        st.dataframe(plan.table, hide_index=True, key="plan_table")
        st.markdown("**Assumptions**")
        st.markdown("\n".join(f"- {k}: {v}" for k, v in plan.assumptions.items()))

queue = project.queue
settings = project.settings
if queue is None or settings is None:
    st.info("No sample yet: choose a design and draw one.")
    st.stop()
problem = project.queue_problem()
if problem:
    st.warning(f"The saved sample no longer fits the project data ({problem}): draw a new one.")
    st.stop()
st.subheader("What will be reviewed")
st.write(
    f"Design **{DESIGNS[settings.design]}**, "
    + (
        f"a budget of {settings.size:,} records to read"
        if settings.design == "recommended"
        else f"{settings.size} units"
    )
    + f", seed {settings.seed}, "
    f"starting from version **{settings.version}**: {len(queue):,} records in the queue "
    f"({queue['unit'].nunique():,} sampled units)."
    + (
        " Decisions saved before this sample was drawn do not count for it."
        if settings.after_event
        else ""
    )
)
if queue["reviewer"].notna().any():
    load = project.workload()
    st.markdown("**Workload** (a double-reviewed unit counts for both its reviewers)")
    st.table(
        load.rename(
            columns={
                "units": "units (first)",
                "records": "records (first)",
                "second_units": "units (blind second)",
                "second_records": "records (blind second)",
                "all_units": "units to review",
                "all_records": "records to review",
            }
        )
    )
shown = data.records.loc[queue["record_id"], data.fields].reset_index(names="record")
shown.insert(1, "unit", queue["unit"].to_numpy())
if queue["reviewer"].notna().any():
    shown.insert(2, "reviewer", queue["reviewer"].to_numpy())
    if queue["second_reviewer"].notna().any():
        shown.insert(3, "second_reviewer", queue["second_reviewer"].to_numpy())
st.dataframe(shown, hide_index=True, key="sample_table", height=420)
