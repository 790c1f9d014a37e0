"""Hand review of sampled clusters: the review design, an append-only store of decisions,
inline checks, agreement of double review, and the true clusters derived from decisions.

The workflow is PatentsView's hand disambiguation (Binette et al., "Estimating the
Performance of Entity Resolution Algorithms: Lessons Learned Through PatentsView.org",
2023, §2.2): sample records, show each one's predicted cluster, let a reviewer remove the
records that do not belong and search for the missing ones to add. The true cluster of a
sampled record is then

    true cluster = predicted cluster shown - removed + added.

The workflow is :class:`Project` (a project folder: data, reviewers, sample design,
queue, store, drafts), shared by the review app and ``er-eval review``. Modules: ``_model``
(events, errors, ids), ``_checks`` (the one set of rules a decision must satisfy),
``_names`` (names and fields side by side), ``_store`` (the SQLite event store),
``_replay`` (decisions in force, true clusters, conflicts), ``_resolve`` (how a
conflict between reviewers is resolved), ``_drafts`` (unsaved edits), ``_sheet``
(review sheet import), ``_design`` (queue, reviewer assignment, the reviewed sample),
``_settings`` (the typed data source, sample settings and reviewer names), ``_agreement`` (double
review), ``_data`` (the project's data), ``_folder`` (the folder's files),
``_estimates`` (what a sample estimates) and ``project`` (the workflow).
"""

from er_evaluation.review._agreement import Agreement, agreement, cohen_kappa
from er_evaluation.review._checks import ValidReview, check_review, validate_review
from er_evaluation.review._data import ProjectData, load_demo
from er_evaluation.review._design import (
    DESIGNS,
    assign_reviewers,
    assign_second_reviewers,
    double_reviewed,
    draw_queue,
    recommended_sample,
    reviewed_sample,
    reviewer_queue,
    workload,
)
from er_evaluation.review._drafts import Draft
from er_evaluation.review._folder import check_folder, is_project
from er_evaluation.review._model import (
    ROLES,
    STATUSES,
    ReviewError,
    ReviewEvent,
    ReviewIssue,
    StaleReviewError,
)
from er_evaluation.review._names import (
    default_name_cols,
    differing_fields,
    field_variants,
    names_beside,
)
from er_evaluation.review._resolve import merged
from er_evaluation.review._settings import (
    ClusteringFile,
    DataSource,
    PredictionsSource,
    RecordsFile,
    SampleSettings,
)
from er_evaluation.review._sheet import parse_sheet, read_sheet
from er_evaluation.review._store import UNCHECKED, ReviewStore
from er_evaluation.review.project import OpenDisagreements, Project, RedrawError, next_to_review

__all__ = [
    "Agreement",
    "ClusteringFile",
    "DESIGNS",
    "DataSource",
    "Draft",
    "OpenDisagreements",
    "PredictionsSource",
    "Project",
    "ProjectData",
    "ROLES",
    "RecordsFile",
    "RedrawError",
    "ReviewError",
    "ReviewEvent",
    "ReviewIssue",
    "ReviewStore",
    "STATUSES",
    "SampleSettings",
    "StaleReviewError",
    "UNCHECKED",
    "ValidReview",
    "agreement",
    "assign_reviewers",
    "assign_second_reviewers",
    "check_folder",
    "check_review",
    "cohen_kappa",
    "default_name_cols",
    "differing_fields",
    "double_reviewed",
    "draw_queue",
    "field_variants",
    "is_project",
    "load_demo",
    "merged",
    "names_beside",
    "next_to_review",
    "parse_sheet",
    "read_sheet",
    "recommended_sample",
    "reviewed_sample",
    "reviewer_queue",
    "validate_review",
    "workload",
]
