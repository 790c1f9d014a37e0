"""er_evaluation: evaluate entity resolution with error bars, from small hand-reviewed samples."""

from er_evaluation._contingency import contingency
from er_evaluation._contingency_table import Contingency
from er_evaluation.clustering import (
    from_clusters,
    from_frame,
    from_graph,
    from_pairs,
    membership,
    to_clusters,
    to_frame,
    to_graph,
    to_pairs,
    validate_membership,
)
from er_evaluation.error_analysis import predicted_cluster_errors, reference_cluster_errors
from er_evaluation.errors import (
    ClusteringError,
    CoverageError,
    CoverageWarning,
    InputFileError,
    PopulationWarning,
    UndefinedMetricWarning,
)
from er_evaluation.metrics import evaluate
from er_evaluation.summary import cluster_size_distribution, summary_statistics, summary_table

__version__ = "0.1.0"
