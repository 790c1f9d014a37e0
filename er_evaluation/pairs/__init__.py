"""Evaluation from labelled record pairs: pools, samplers (passive, stratified, static
importance sampling, OASIS, the adaptive importance sampler of Marchant & Rubinstein 2021 for any
measure), target measures (F-scores, PR curves, custom), oracles, resumable labelling sessions, single-run estimates
of precision / recall / F with standard errors, and label reuse across predictions
(design §5; Marchant & Rubinstein 2017, 2021; Chaganty et al. 2017)."""

from er_evaluation.pairs._stratify import Strata, csf_edges, stratify
from er_evaluation.pairs.ais import AISSampler
from er_evaluation.pairs.estimates import (
    PairEstimates,
    estimate_from_labels,
    f_alpha_name,
    history,
    metric_names,
)
from er_evaluation.pairs.measures import (
    Measure,
    PRCurve,
    custom_measure,
    estimate_measure,
    f_measures,
    pr_curve,
    pr_curve_table,
)
from er_evaluation.pairs.oracles import (
    CallableOracle,
    CountingOracle,
    LabelOracle,
    oracle_from_reference,
    oracle_label,
    parse_answer,
)
from er_evaluation.pairs.pool import (
    DEFAULT_MAX_PAIRS,
    PairPool,
    PoolError,
    PoolSizeError,
    block_sizes,
    field_similarity_score,
    labelling_pool,
    pool_from_blocks,
    pool_size_problem,
    predicted_from_clustering,
    split_blocks,
)
from er_evaluation.pairs.registry import METHODS, make_sampler
from er_evaluation.pairs.reuse import (
    Proposals,
    TracedRun,
    as_importance_run,
    continue_sampling,
    labels_needed,
    mixture_weights,
    proposals_of,
    reuse_estimate,
    sample_traced,
)
from er_evaluation.pairs.run import LabelRun, sample_labels
from er_evaluation.pairs.samplers import (
    Draw,
    ImportanceSampler,
    OASISSampler,
    PassiveSampler,
    StratifiedSampler,
    score_probabilities,
)
from er_evaluation.pairs.session import LabellingSession, PendingPair, SessionError, read_log

__all__ = [
    "AISSampler",
    "Measure",
    "PRCurve",
    "custom_measure",
    "estimate_measure",
    "f_measures",
    "pr_curve",
    "pr_curve_table",
    "CallableOracle",
    "CountingOracle",
    "DEFAULT_MAX_PAIRS",
    "Draw",
    "ImportanceSampler",
    "LabelOracle",
    "LabelRun",
    "LabellingSession",
    "METHODS",
    "OASISSampler",
    "PairEstimates",
    "PairPool",
    "PassiveSampler",
    "PendingPair",
    "PoolError",
    "PoolSizeError",
    "Proposals",
    "SessionError",
    "StratifiedSampler",
    "Strata",
    "TracedRun",
    "as_importance_run",
    "block_sizes",
    "continue_sampling",
    "csf_edges",
    "estimate_from_labels",
    "f_alpha_name",
    "field_similarity_score",
    "history",
    "labelling_pool",
    "labels_needed",
    "make_sampler",
    "metric_names",
    "mixture_weights",
    "oracle_from_reference",
    "oracle_label",
    "parse_answer",
    "pool_from_blocks",
    "pool_size_problem",
    "predicted_from_clustering",
    "proposals_of",
    "read_log",
    "reuse_estimate",
    "sample_labels",
    "sample_traced",
    "score_probabilities",
    "split_blocks",
    "stratify",
]
