"""A shareable report of an evaluation: one self-contained HTML file (plotly's
JavaScript embedded, nothing fetched when it opens) with the estimates across versions
and their intervals, each estimate's reliability in words, the reviewed sample's design
and size, per-stratum contributions, paired differences between consecutive versions,
the agreement of double review, statistics of the true clustering and the largest
over-merged and split clusters with their records.

:func:`build_report` (predictions and a reviewed sample, or the recommended design's two
samples: :class:`~er_evaluation.recommend.DesignSample`), :func:`project_report` (a
review project folder) and :func:`demo_report` (the bundled PatentsView data) compute a
:class:`Report`; :func:`write_report` writes it. ``er-eval report`` and the review app's
"Download report" call these. Requires plotly (``pip install er_evaluation_toolkit[app]``).
"""

from er_evaluation.report._content import (
    DEFAULT_METRICS,
    ClusterErrors,
    Report,
    build_report,
    cluster_errors,
    consecutive_differences,
    demo_report,
    project_report,
    reliability_words,
    sample_description,
)
from er_evaluation.report._html import report_figures, report_html, write_report

__all__ = [
    "DEFAULT_METRICS",
    "ClusterErrors",
    "Report",
    "build_report",
    "cluster_errors",
    "consecutive_differences",
    "demo_report",
    "project_report",
    "reliability_words",
    "report_figures",
    "report_html",
    "sample_description",
    "write_report",
]
