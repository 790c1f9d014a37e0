"""Estimates: pairwise precision, recall and F1 with confidence intervals for every version."""

from __future__ import annotations

import warnings

import pandas as pd
import streamlit as st

from er_evaluation.app.app_common import data_key, open_project, plain_errors
from er_evaluation.errors import CoverageWarning
from er_evaluation.estimators import blocking_table, compare, stratum_contributions
from er_evaluation.estimators.diagnostics import effective_words
from er_evaluation.estimators.results import SHOWN_COLUMNS, unreliable_notes
from er_evaluation.plots import plot_estimates
from er_evaluation.recommend import DesignSample
from er_evaluation.report import build_report, report_html
from er_evaluation.review import DESIGNS
from er_evaluation.review._design import distinct_units_note
from er_evaluation.review._estimates import version_estimates
from er_evaluation.sampling import benchmark_sample
from er_evaluation.vocabulary import REGISTRY, STATISTICS

# the metrics this page shows, with their titles
SHOWN_METRICS = {
    name: REGISTRY[name].title for name in ("pairwise_precision", "pairwise_recall", "pairwise_f1")
}

st.title("Estimates")
project = open_project()
data = project.data
sources = ["reviews"] + (["benchmark"] if data.benchmark is not None else [])
source = st.radio(
    "Reviewed benchmark",
    sources,
    format_func={
        "reviews": "Reviews saved in this project",
        "benchmark": "The project's existing benchmark"
        + (" (Binette et al. 2022 PatentsView inventors)" if data.source == "demo" else ""),
    }.get,
    key="est_source",
    horizontal=True,
)

open_disagreements = None
if source == "reviews":
    settings = project.settings
    if project.queue is None or settings is None:
        st.info("No sample yet: draw one on the Sample page and review it.")
        st.stop()
    with plain_errors("Could not build the reviewed sample"):
        sample, n_units = project.sample()
    if sample is None:
        st.info("No finished review yet: estimates appear as soon as the first one is saved.")
        st.stop()
    cache_key = (
        data_key(data),
        str(project.store.path),
        project.store.last_event_id(),
        repr(settings),
    )
    st.caption(
        f"Design: {DESIGNS[settings.design]} from version {settings.version}; "
        f"{n_units} finished units{distinct_units_note(n_units, sample.n_units)}, "
        f"{sample.n_records} reviewed records."
    )
    open_disagreements = project.disagreements()
    if len(open_disagreements):
        st.warning(open_disagreements.note, icon=":material/gavel:")
        with st.expander("Which decision each figure uses"):
            st.dataframe(open_disagreements.table, hide_index=True, key="est_disagreements")
        st.page_link("views/adjudication.py", label="Settle them on the Adjudication page")
else:
    weights = st.selectbox(
        "How the benchmark's clusters were sampled",
        ["cluster_size", "uniform"],
        format_func={
            "cluster_size": "records uniformly (clusters by size)",
            "uniform": "clusters uniformly",
        }.get,
        key="bench_weights",
    )
    with plain_errors("Could not use the benchmark"):
        sample = benchmark_sample(data.benchmark, weights=weights)
    cache_key = (data_key(data), "benchmark", weights)
    st.caption(f"{sample.n_units} true clusters, {sample.n_records} records.")

if source == "reviews" and settings.design == "change":
    # a sample of changed records estimates differences only
    base, other = settings.version, settings.other_version
    differences, refused = project.differences(sample, SHOWN_METRICS)
    st.subheader(f"Paired difference {other} − {base} from the changed records")
    for col, (metric, label) in zip(
        st.columns(len(SHOWN_METRICS)), SHOWN_METRICS.items(), strict=True
    ):
        if metric in refused:
            col.info(f"{label}: {refused[metric]}")
            continue
        d = differences[metric]
        col.metric(
            f"{label}: {other} − {base}",
            f"{d.value:+.3f}",
            help=f"{d.level:.0%} CI [{d.ci_low:+.3f}, {d.ci_high:+.3f}]",
        )
        col.caption(f"{d.level:.0%} CI [{d.ci_low:+.3f}, {d.ci_high:+.3f}] · SE {d.std_error:.4f}")
    st.stop()

if source == "reviews":
    allowed = project.estimable(sample)
    SHOWN_METRICS = {m: SHOWN_METRICS[m] for m in allowed.metrics}
    if allowed.note:
        st.caption(allowed.note)
if source == "reviews" and len(allowed.versions) < len(data.versions):
    versions = list(allowed.versions)
else:
    versions = st.multiselect("Versions", data.versions, default=data.versions, key="est_versions")
if not versions:
    st.stop()


@st.cache_data(show_spinner="Estimating…", max_entries=32)
def estimates(key: tuple, versions: tuple, metrics: tuple, _sample) -> pd.DataFrame:
    return version_estimates(data.predictions, _sample, versions, metrics)


with plain_errors("Could not estimate"):
    table = estimates(cache_key, tuple(versions), tuple(SHOWN_METRICS), sample)

focus = st.selectbox("Version in focus", versions, index=len(versions) - 1, key="est_focus")
cols = st.columns(len(SHOWN_METRICS))
for col, (metric, label) in zip(cols, SHOWN_METRICS.items(), strict=True):
    row = table[(table["prediction"] == focus) & (table["metric"] == metric)].iloc[0]
    if pd.isna(row["value"]):
        # an undefined estimate has no interval; its note below says why
        value, interval = "undefined", "no interval"
    else:
        value = f"{row['value']:.3f}"
        interval = (
            f"{row['level']:.0%} CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}] · SE "
            f"{row['std_error']:.3f}"
        )
    col.metric(label, value, help=interval)
    col.caption(
        f"{interval} · {row['estimator']} estimator, {row['design']} design, "
        f"n = {row['n_draws']} draws, {effective_words(row['n_effective'])}"
    )
    for note in unreliable_notes(row.to_frame().T):
        col.warning(note)

chart = plot_estimates(table)
chart.update_xaxes(type="category")  # version names look like dates; keep them as labels
st.plotly_chart(chart, key="est_chart")
shown = table[["prediction", "metric", *SHOWN_COLUMNS]]
st.dataframe(
    shown,
    hide_index=True,
    key="est_table",
    column_config={
        "n_effective": st.column_config.NumberColumn(
            format="%.1f",
            help="The number of equally weighted reviewed units the sample is worth (Kish)",
        )
    },
)

# the recommended design's report shows every version: the one it was drawn from with
# both parts, the others from its records drawn for recall (er_evaluation.report)
recommended = isinstance(sample, DesignSample)
reported = data.versions if recommended else versions
report_key = (cache_key, tuple(reported))
if st.button("Build the report", key="build_report"):
    with plain_errors("Could not build the report"), st.spinner("Building the report…"):
        double = project.agreement() if source == "reviews" else None
        built = build_report(
            {v: data.predictions[v] for v in reported},
            sample,
            drawn_from=settings.version if recommended else None,
            title=f"Entity resolution evaluation ({data.source} data)",
            review_agreement=double if double is not None and double.n_units else None,
            records=data.records,
            fields=tuple(data.fields[:4]),
        )
        st.session_state["report"] = (report_key, report_html(built))
if st.session_state.get("report", (None,))[0] == report_key:
    st.download_button(
        "Download report",
        st.session_state["report"][1],
        file_name="er_evaluation_report.html",
        mime="text/html",
        key="download_report",
        help="One HTML file (opens offline): estimates, reliability, the sample, paired "
        "differences, double review and the largest errors.",
    )
if not recommended and sample.strata is not None:
    st.subheader("Per-stratum contributions")
    st.caption(
        "Each stratum's frame size, draws and selection probability, the metric on the "
        "stratum alone, and its share of the estimate's variance (0 for take-all strata)."
    )
    strata_metric = st.selectbox(
        "Metric", list(SHOWN_METRICS), format_func=SHOWN_METRICS.get, key="strata_metric"
    )
    with plain_errors("Could not split the estimate by stratum"):
        parts = stratum_contributions(
            data.predictions[focus], sample, strata_metric, on_missing="restrict"
        )
    st.dataframe(parts, hide_index=True, key="strata_table")
if data.blocks is not None and not recommended and sample.sample_of == "reference":
    st.subheader("Recall lost to blocking")
    st.caption(
        f"Of the true links, the share whose records share a {data.block_col!r} block, and of "
        f"those the share {focus} found: recall = blocking recall × matching recall when "
        "every predicted cluster lies inside one block."
    )
    with plain_errors("Could not estimate the recall lost to blocking"):
        blocking = blocking_table(
            {focus: data.predictions[focus]}, sample, data.blocks, on_missing="restrict"
        )
    for col, row in zip(st.columns(len(blocking)), blocking.itertuples(), strict=True):
        col.metric(STATISTICS[row.metric].title, f"{row.value:.3f}")
        col.caption(
            f"{row.level:.0%} CI [{row.ci_low:.3f}, {row.ci_high:.3f}] · SE {row.std_error:.3f}"
        )
        if not row.reliable:
            col.warning(f"Not reliable: {row.reason}")
dropped = table.groupby("prediction", sort=False)["dropped_records"].max()
dropped = dropped[dropped > 0]
if len(dropped):
    st.caption(
        "Reviewed records outside a version's population are left out for that version: "
        + ", ".join(f"{v}: {n:,}" for v, n in dropped.items())
        + "."
    )

if source == "reviews":
    with plain_errors("Could not estimate per reviewer"):
        spread = project.reviewer_estimates(versions=[focus], metrics=list(SHOWN_METRICS))
    if not spread.empty:
        st.subheader("Under each reviewer's decisions")
        st.caption(
            "Each reviewer's own decisions where they made one (the decision in force "
            "elsewhere). The spread measures reviewer uncertainty, beside each estimate's "
            "sampling error."
        )
        wide = spread.pivot_table(
            index=["prediction", "metric"], columns="reviewer", values="value", sort=False
        )
        wide["spread"] = wide.max(axis=1) - wide.min(axis=1)
        st.dataframe(wide.reset_index(), hide_index=True, key="est_reviewer_spread")

st.subheader("Paired difference between two versions")
st.caption("The difference on the same reviewed sample, with its own standard error.")
c1, c2, c3 = st.columns(3)
base = c1.selectbox("Baseline", versions, index=0, key="diff_a")
other = c2.selectbox("Compared with", versions, index=len(versions) - 1, key="diff_b")
metric = c3.selectbox(
    "Metric", list(SHOWN_METRICS), format_func=SHOWN_METRICS.get, key="diff_metric"
)
if base == other:
    st.info("Choose two different versions (paired differences need two on one sample).")
    st.stop()
with plain_errors("Could not compare"), warnings.catch_warnings():
    # the caption says how many reviewed records a version lacks
    warnings.simplefilter("ignore", CoverageWarning)
    diff = compare(
        {other: data.predictions[other], base: data.predictions[base]},
        sample,
        metric,
        baseline=base,
        on_missing="restrict",
    ).iloc[0]
st.metric(
    f"{SHOWN_METRICS[metric]}: {other} − {base}",
    f"{diff.value:+.3f}",
    help=f"{diff.level:.0%} CI [{diff.ci_low:+.3f}, {diff.ci_high:+.3f}]",
)
st.caption(
    f"{diff.level:.0%} CI [{diff.ci_low:+.3f}, {diff.ci_high:+.3f}] · SE {diff.std_error:.3f} · "
    f"{diff.estimator} estimator, {diff.design} design, n = {diff.n_draws}"
    + (
        f" · {diff.dropped_records:,} reviewed records absent from a version left out"
        if diff.dropped_records
        else ""
    )
)
