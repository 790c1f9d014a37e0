"""Plotly figures of estimates and of the simulation study, returned (never shown).

- :func:`plot_estimates`: estimates with their confidence intervals as error bars, one
  point per prediction (e.g. PatentsView version), one trace per metric;
- :func:`plot_pr_curve`: an estimated precision-recall curve of a pair pool with pointwise
  intervals (Marchant & Rubinstein 2021, Example 1; :func:`er_evaluation.pairs.pr_curve_table`);
- :func:`plot_simulation`: distributions of a study's estimates against the true value
  (Binette et al. 2023, Figures 3-4), one panel per misattribution rate.

Requires plotly (``pip install er_evaluation_toolkit[app]``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from er_evaluation.simulation import StudyResult

__all__ = ["plot_estimates", "plot_pr_curve", "plot_simulation"]


def plot_estimates(
    table: pd.DataFrame,
    *,
    metrics: Sequence[str] | None = None,
    title: str | None = None,
) -> go.Figure:
    """Estimates with confidence-interval error bars per prediction, one trace per metric.

    ``table`` is a tidy table as returned by
    :func:`~er_evaluation.estimators.estimate_table` (columns ``prediction``, ``metric``,
    ``value``, ``ci_low``, ``ci_high``; ``level`` and ``ci_method`` label the axis). Error
    bars are asymmetric: ``ci_high - value`` above and ``value - ci_low`` below. Predictions
    keep the table's order on the x axis. ``metrics`` selects and orders the traces.
    """
    required = {"prediction", "metric", "value", "ci_low", "ci_high"}
    missing = required - set(table.columns)
    if missing:
        raise ValueError(
            f"table lacks column(s) {sorted(missing)} (expected estimate_table output)"
        )
    if table.empty:
        raise ValueError("table has no rows to plot")
    present = list(dict.fromkeys(table["metric"]))
    metrics = present if metrics is None else list(metrics)
    unknown = [m for m in metrics if m not in present]
    if unknown:
        raise ValueError(f"metric(s) {unknown} not in the table; it has {present}")
    order = list(dict.fromkeys(table["prediction"].astype(str)))
    fig = go.Figure()
    for metric in metrics:
        rows = table[table["metric"] == metric]
        x = rows["prediction"].astype(str).tolist()
        value = rows["value"].to_numpy(dtype=float)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=value,
                mode="markers+lines",
                name=metric,
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=rows["ci_high"].to_numpy(dtype=float) - value,
                    arrayminus=value - rows["ci_low"].to_numpy(dtype=float),
                ),
            )
        )
    fig.update_layout(
        title=title or "Estimates with confidence intervals",
        # categorical: version names such as "2022-06-30" must not become a date axis
        xaxis=dict(title="prediction", type="category", categoryorder="array", categoryarray=order),
        yaxis=dict(title=_interval_label(table)),
        legend_title_text="metric",
    )
    return fig


def _interval_label(table: pd.DataFrame) -> str:
    if "level" not in table or "ci_method" not in table:
        return "estimate"
    levels = table["level"].dropna().unique()
    methods = table["ci_method"].dropna().unique()
    if len(levels) == 1 and len(methods) == 1:
        return f"estimate ({levels[0]:.0%} CI, {methods[0]})"
    return "estimate (with CI)"


def plot_simulation(
    result: StudyResult,
    metric: str = "pairwise_precision",
    *,
    estimators: Sequence[str] | None = None,
) -> go.Figure:
    """Distributions of the study's estimates of ``metric`` against the truth.

    One panel per misattribution rate; in each, one box per (sample size, estimator) of the
    replicate estimates, and a dotted horizontal line at the exact value of the prediction
    (Binette et al. 2023, Figures 3-4). ``estimators`` selects and orders the estimators.
    """
    rep = result.replicates[result.replicates["metric"] == metric]
    if rep.empty:
        raise ValueError(
            f"the study has no estimates of {metric!r}; it has {sorted(result.replicates['metric'].unique())}"
        )
    present = list(dict.fromkeys(rep["estimator"]))
    estimators = present if estimators is None else list(estimators)
    unknown = [e for e in estimators if e not in present]
    if unknown:
        raise ValueError(f"estimator(s) {unknown} not in the study; it has {present}")
    rates = sorted(rep["rate"].unique())
    fig = make_subplots(
        rows=1,
        cols=len(rates),
        shared_yaxes=True,
        subplot_titles=[f"rate {r:g}" for r in rates],
    )
    truth = result.truth.set_index("rate")[metric]
    for col, rate in enumerate(rates, start=1):
        at_rate = rep[rep["rate"] == rate]
        for name in estimators:
            d = at_rate[at_rate["estimator"] == name]
            fig.add_trace(
                go.Box(
                    x=d["sample_size"].astype(str).tolist(),
                    y=d["value"].to_numpy(dtype=float),
                    name=name,
                    legendgroup=name,
                    offsetgroup=name,
                    showlegend=col == 1,
                    boxpoints=False,
                ),
                row=1,
                col=col,
            )
        fig.add_hline(
            y=float(truth[rate]),
            line_dash="dot",
            annotation_text="truth",
            row=1,
            col=col,
        )
    fig.update_layout(
        boxmode="group",
        title=f"Simulation: {metric} estimates over {result.repetitions} samples",
        legend_title_text="estimator",
    )
    fig.update_xaxes(title_text="sample size (records)")
    fig.update_yaxes(title_text=metric, col=1)
    return fig


def plot_pr_curve(
    curve: pd.DataFrame,
    *,
    truth: pd.DataFrame | None = None,
    title: str | None = None,
) -> go.Figure:
    """Estimated precision-recall curve with pointwise confidence intervals.

    ``curve`` is :func:`er_evaluation.pairs.pr_curve_table` output (columns
    ``threshold``, ``precision``, ``precision_low``, ``precision_high``, ``recall``,
    ``recall_low``, ``recall_high``): one marker per score threshold at (recall,
    precision), with asymmetric error bars (the precision interval vertically, the recall
    interval horizontally) and the threshold in the hover label. ``truth`` (columns
    ``recall``, ``precision``) adds the exact curve as a dotted line. Thresholds where
    precision or recall is undefined are left out.
    """
    required = {"threshold", "precision", "precision_low", "precision_high", "recall"}
    required |= {"recall_low", "recall_high"}
    missing = required - set(curve.columns)
    if missing:
        raise ValueError(
            f"curve lacks column(s) {sorted(missing)} (expected pr_curve_table output)"
        )
    shown = curve.dropna(subset=["precision", "recall"])
    if shown.empty:
        raise ValueError("no threshold has both precision and recall defined: nothing to plot")
    p, r = shown["precision"].to_numpy(float), shown["recall"].to_numpy(float)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=r,
            y=p,
            mode="markers+lines",
            name="estimate",
            text=[f"score ≥ {t:.4g}" for t in shown["threshold"]],
            hovertemplate="%{text}<br>recall %{x:.3f}<br>precision %{y:.3f}<extra></extra>",
            error_y=dict(
                type="data",
                symmetric=False,
                array=shown["precision_high"].to_numpy(float) - p,
                arrayminus=p - shown["precision_low"].to_numpy(float),
                thickness=1,
            ),
            error_x=dict(
                type="data",
                symmetric=False,
                array=shown["recall_high"].to_numpy(float) - r,
                arrayminus=r - shown["recall_low"].to_numpy(float),
                thickness=1,
            ),
        )
    )
    if truth is not None:
        fig.add_trace(
            go.Scatter(
                x=truth["recall"].to_numpy(float),
                y=truth["precision"].to_numpy(float),
                mode="lines",
                name="truth",
                line=dict(dash="dot"),
            )
        )
    fig.update_layout(
        title=title or "Precision-recall curve with pointwise confidence intervals",
        xaxis=dict(title="recall", range=[0, 1.02]),
        yaxis=dict(title="precision", range=[0, 1.02]),
    )
    return fig
