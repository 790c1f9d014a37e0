"""Hand review of sampled clusters: the review design, an append-only store of decisions,
inline checks, agreement of double review, and the true clusters derived from decisions.

The workflow is PatentsView's hand disambiguation (Binette et al., "Estimating the
Performance of Entity Resolution Algorithms: Lessons Learned Through PatentsView.org",
2023, §2.2): sample records, show each one's predicted cluster, let a reviewer remove the
records that do not belong and search for the missing ones to add. The true cluster of a
sampled record is then

    true cluster = predicted cluster shown - removed + added.

Modules: ``_model`` (events, errors, ids), ``_checks`` (the one set of rules a decision
must satisfy), ``_names`` (names and fields side by side), ``_store`` (the SQLite event
store), ``_replay`` (decisions in force, true clusters, conflicts), ``_sheet`` (review
sheet import), ``_design`` (queue, reviewer assignment, the reviewed sample),
``_agreement`` (double review), and the public ``project`` (a project folder, shared by the app and the
``er-eval review`` command).
"""

from er_evaluation.review._agreement import Agreement, agreement, cohen_kappa
from er_evaluation.review._checks import ValidReview, check_review, validate_review
from er_evaluation.review._design import (
    DESIGNS,
    assign_reviewers,
    assign_second_reviewers,
    double_reviewed,
    draw_queue,
    reviewed_sample,
    reviewer_queue,
)
from er_evaluation.review._model import (
    ROLES,
    STATUSES,
    ReviewError,
    ReviewEvent,
    ReviewIssue,
    StaleReviewError,
)
from er_evaluation.review._names import default_name_cols, differing_fields, names_beside
from er_evaluation.review._sheet import parse_sheet
from er_evaluation.review._store import UNCHECKED, ReviewStore
from er_evaluation.review.project import Project, ProjectData, check_folder

__all__ = [
    "Agreement",
    "DESIGNS",
    "Project",
    "ProjectData",
    "ROLES",
    "ReviewError",
    "ReviewEvent",
    "ReviewIssue",
    "ReviewStore",
    "STATUSES",
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
    "names_beside",
    "parse_sheet",
    "reviewed_sample",
    "reviewer_queue",
    "validate_review",
]
