"""A report as one self-contained HTML file: plotly's JavaScript embedded once, every
figure drawn by it, no file or address fetched when the page opens."""

from __future__ import annotations

import html
import math
import os
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from er_evaluation.plots import plot_estimates
from er_evaluation.report._content import ClusterErrors, Report

__all__ = ["report_figures", "report_html", "write_report"]

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto;
       max-width: 72rem; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.8rem; margin-bottom: 0.2rem; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; margin-top: 2.2rem; }
.meta { color: #666; font-size: 0.9rem; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.6rem 0 1rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f4f5f7; }
td:first-child { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.unreliable td { background: #fff4e5; }
.note { background: #f4f7fb; border-left: 4px solid #6b8cc7; padding: 0.4rem 0.8rem; }
"""

_ESTIMATE_COLUMNS = {
    "prediction": "version",
    "metric": "metric",
    "value": "estimate",
    "ci_low": "interval low",
    "ci_high": "interval high",
    "std_error": "standard error",
    "estimator": "estimator",
    "n_units": "units",
    "reliability": "reliability",
}


def _cell(value) -> tuple[str, bool]:
    """(text, numeric) of one table cell."""
    if isinstance(value, bool):
        return ("yes" if value else "no"), False
    if isinstance(value, int) or (hasattr(value, "dtype") and value.dtype.kind in "iu"):
        return f"{int(value):,}", True
    if isinstance(value, float):
        if math.isnan(value):
            return "", True
        return f"{value:.4f}", True
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "", False
    return str(value), False


def _table(frame: pd.DataFrame, *, unreliable: pd.Series | None = None) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    flags = [False] * len(frame) if unreliable is None else list(unreliable)
    for flag, record in zip(flags, frame.itertuples(index=False), strict=True):
        cells = []
        for value in record:
            text, numeric = _cell(value)
            cls = ' class="num"' if numeric else ""
            cells.append(f"<td{cls}>{html.escape(text)}</td>")
        cls = ' class="unreliable"' if flag else ""
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _estimates_table(table: pd.DataFrame) -> str:
    columns = [c for c in _ESTIMATE_COLUMNS if c in table.columns]
    shown = table[columns].rename(columns=_ESTIMATE_COLUMNS)
    return _table(shown, unreliable=~table["reliable"].astype(bool))


def _reliability_figure(table: pd.DataFrame) -> go.Figure:
    """Effective number of units behind each estimate, unreliable ones marked."""
    fig = go.Figure()
    for metric, rows in table.groupby("metric", sort=False):
        fig.add_trace(
            go.Bar(
                x=rows["prediction"].astype(str),
                y=rows["n_effective"].astype(float),
                name=str(metric),
                hovertext=rows["reliability"],
                marker_line_width=[2 if not r else 0 for r in rows["reliable"].astype(bool)],
                marker_line_color="#d9480f",
            )
        )
    fig.update_layout(
        title="Effective number of reviewed units behind each estimate",
        barmode="group",
        xaxis=dict(title="version", type="category"),
        yaxis=dict(title="effective units (Kish)", type="log"),
        legend_title_text="metric",
    )
    return fig


def _errors_figure(errors: ClusterErrors) -> go.Figure:
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            y=[f"predicted {c}" for c in errors.over_merged["predicted_cluster"].astype(str)],
            x=errors.over_merged["extra"],
            orientation="h",
            name="over-merged: records of other entities",
        )
    )
    fig.add_trace(
        go.Bar(
            y=[f"true {c}" for c in errors.split["true_cluster"].astype(str)],
            x=errors.split["missing"],
            orientation="h",
            name="split: records outside the main predicted cluster",
        )
    )
    fig.update_layout(
        title=f"Largest errors of {errors.version} among the reviewed clusters",
        xaxis=dict(title="records"),
        yaxis=dict(type="category", autorange="reversed"),
        height=320 + 24 * (len(errors.over_merged) + len(errors.split)),
    )
    return fig


def _strata_figure(strata: pd.DataFrame) -> go.Figure | None:
    share = next((c for c in strata.columns if "share" in c), None)
    if share is None:
        return None
    fig = go.Figure()
    for metric, rows in strata.groupby("metric", sort=False):
        fig.add_trace(go.Bar(x=rows["stratum"].astype(str), y=rows[share], name=str(metric)))
    fig.update_layout(
        title="Share of each stratum in the variance",
        barmode="group",
        xaxis=dict(title="stratum", type="category"),
        yaxis=dict(title=share),
    )
    return fig


def report_figures(report: Report) -> dict[str, go.Figure]:
    """The report's figures by section: estimates across versions, their reliability,
    paired differences, per-stratum variance shares and the largest errors (those whose
    data the report has)."""
    figures = {
        "estimates": plot_estimates(
            report.estimates, title="Estimates across versions, with confidence intervals"
        ),
        "reliability": _reliability_figure(report.estimates),
    }
    if report.differences is not None and not report.differences.empty:
        figures["differences"] = plot_estimates(
            report.differences, title="Paired differences between consecutive versions"
        )
        figures["differences"].add_hline(y=0, line_dash="dot", line_color="#888")
    if report.strata is not None and "stratum" in report.strata:
        strata = _strata_figure(report.strata)
        if strata is not None:
            figures["strata"] = strata
    if report.errors is not None and (len(report.errors.over_merged) or len(report.errors.split)):
        figures["errors"] = _errors_figure(report.errors)
    return figures


def _figure_html(fig: go.Figure, name: str) -> str:
    return pio.to_html(
        fig,
        full_html=False,
        include_plotlyjs=False,
        include_mathjax=False,
        div_id=f"figure-{name}",
        config={"displaylogo": False, "responsive": True},
    )


def _section(title: str, *parts: str) -> str:
    return f"<section><h2>{html.escape(title)}</h2>{''.join(parts)}</section>"


def _p(text: str, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<p{attr}>{html.escape(text)}</p>"


def report_html(report: Report) -> str:
    """The report as one HTML document: plotly's JavaScript embedded, no external
    resource."""
    figures = {name: _figure_html(fig, name) for name, fig in report_figures(report).items()}
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    level = report.estimates["level"].iloc[0] if len(report.estimates) else 0.95
    method = report.estimates["ci_method"].iloc[0] if len(report.estimates) else ""
    sections = [
        _section(
            "Estimates across versions",
            _p(
                f"Design-based estimates from the reviewed sample with {level:.0%} "
                f"confidence intervals ({method}); Binette et al. (2023). Rows shaded "
                f"orange are not reliable: their reliability column says why."
            ),
            figures["estimates"],
            _estimates_table(report.estimates),
        ),
        _section(
            "Reliability of each estimate",
            _p(
                "The effective number of reviewed units carrying each estimate (Kish): "
                "few effective units, or a few units carrying most of an estimate, make its "
                "interval unreliable."
            ),
            figures["reliability"],
        ),
        _section("The reviewed sample", _table(report.sample)),
    ]
    if report.strata is not None and len(report.strata):
        sections.append(
            _section(
                "Contributions of the strata",
                _p(f"Per-stratum parts of the estimates of {report.strata['prediction'].iloc[0]}."),
                figures.get("strata", ""),
                _table(report.strata),
            )
        )
    if report.differences is not None:
        sections.append(
            _section(
                "Paired differences between versions",
                _p(
                    "Each later version minus the one before it, on the same reviewed "
                    "sample, with the standard error of the paired difference (not two "
                    "error bars combined)."
                ),
                figures.get("differences", ""),
                _estimates_table(report.differences),
            )
        )
    if report.agreement is not None:
        a = report.agreement
        rows = pd.DataFrame(
            [
                ("records reviewed twice", f"{a.n_units:,}"),
                ("identical true clusters", f"{a.identical_share:.1%}"),
                ("link decisions compared", f"{a.n_links:,}"),
                ("agreement on link decisions", f"{a.link_agreement:.1%}"),
                ("Cohen's kappa", "" if math.isnan(a.kappa) else f"{a.kappa:.3f}"),
            ],
            columns=["statistic", "value"],
        )
        sections.append(_section("Agreement of double review", _table(rows)))
    else:
        sections.append(
            _section(
                "Agreement of double review",
                _p("No record of this sample was reviewed by two reviewers."),
            )
        )
    if report.truth is not None:
        shown = report.truth[["metric", "value", "ci_low", "ci_high", "std_error", "reliability"]]
        sections.append(
            _section(
                "The true clustering, estimated from the sample",
                _table(shown.rename(columns={"metric": "statistic"})),
            )
        )
    if report.blocking is not None:
        shown = report.blocking[
            ["prediction", "metric", "value", "ci_low", "ci_high", "std_error", "reliability"]
        ]
        sections.append(
            _section(
                "Recall lost to blocking",
                _p(
                    "Blocking recall: the share of true links whose records share a block. "
                    "Matching recall: of those, the share the version found. Recall is "
                    "their product when every predicted cluster lies inside one block."
                ),
                _table(shown),
            )
        )
    if report.errors is not None:
        e = report.errors
        sections.append(
            _section(
                f"Error analysis of {e.version}",
                _p(
                    "Over-merged: predicted clusters holding a reviewed entity and records of "
                    "other entities. Split: reviewed entities spread over several predicted "
                    "clusters. Records outside the reviewed clusters have no true cluster."
                ),
                figures.get("errors", ""),
                "<h3>Over-merged predicted clusters</h3>",
                _table(e.over_merged) if len(e.over_merged) else _p("None among the reviewed."),
                "<h3>Split true clusters</h3>",
                _table(e.split) if len(e.split) else _p("None among the reviewed."),
                "<h3>Their records</h3>",
                _table(e.records),
            )
        )
    notes = "".join(_p(n, "note") for n in report.notes)
    body = "".join(sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(report.title)}</title><style>{_STYLE}</style>"
        f'<script type="text/javascript">{get_plotlyjs()}</script></head><body>'
        f"<h1>{html.escape(report.title)}</h1>"
        f'<p class="meta">{html.escape(report.source)} Made {made} by er_evaluation '
        f"{html.escape(report.version)}.</p>{notes}{body}</body></html>\n"
    )


def write_report(report: Report, path: str | os.PathLike) -> Path:
    """Write :func:`report_html` of ``report`` to ``path`` (UTF-8) and return the path."""
    path = Path(path)
    path.write_text(report_html(report), encoding="utf-8")
    return path
