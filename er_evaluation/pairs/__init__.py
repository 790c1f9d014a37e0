"""Evaluation from labelled record pairs (Marchant & Rubinstein 2017, 2021; Chaganty et
al. 2017).

- Pools: :class:`PairPool` (candidate pairs with a score and the system's 0/1 decision),
  built from a table or from blocks of records (:func:`labelling_pool`).
- Samplers: :func:`make_sampler` (passive, stratified, static importance sampling,
  OASIS, the adaptive importance sampler of Marchant & Rubinstein 2021 for any measure)
  over score strata (:func:`stratify`).
- Labels: :func:`sample_labels` against an oracle, or a resumable
  :class:`LabellingSession` a person answers; both give a :class:`LabelRun`.
- Estimates: :func:`estimate_from_labels` (precision, recall and F_beta with standard
  errors, intervals and diagnostics), :func:`estimate_measure` (any measure, PR curves).
- Label reuse across predictions: :func:`reuse_estimate`, :func:`continue_sampling`.
"""

from er_evaluation.pairs._stratify import ScoreStrata, stratify
from er_evaluation.pairs.ais import AISSampler
from er_evaluation.pairs.estimates import PairEstimates, estimate_from_labels, estimate_history
from er_evaluation.pairs.measures import (
    Measure,
    PRCurve,
    custom_measure,
    estimate_measure,
    f_measures,
    pr_curve,
    pr_curve_table,
)
from er_evaluation.pairs.oracles import CallableOracle, LabelOracle, oracle_from_reference
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
    TracedRun,
    continue_sampling,
    labels_needed,
    reuse_estimate,
    sample_traced,
)
from er_evaluation.pairs.run import LabelRun, sample_labels
from er_evaluation.pairs.samplers import (
    ImportanceSampler,
    OASISSampler,
    PassiveSampler,
    StratifiedSampler,
)
from er_evaluation.pairs.session import LabellingSession, PendingPair, SessionError, read_log
from er_evaluation.pairs.stopping import IntervalWidths, interval_widths

__all__ = [
    "AISSampler",
    "CallableOracle",
    "DEFAULT_MAX_PAIRS",
    "ImportanceSampler",
    "IntervalWidths",
    "LabelOracle",
    "LabelRun",
    "LabellingSession",
    "METHODS",
    "Measure",
    "OASISSampler",
    "PRCurve",
    "PairEstimates",
    "PairPool",
    "PassiveSampler",
    "PendingPair",
    "PoolError",
    "PoolSizeError",
    "ScoreStrata",
    "SessionError",
    "StratifiedSampler",
    "TracedRun",
    "block_sizes",
    "continue_sampling",
    "custom_measure",
    "estimate_from_labels",
    "estimate_history",
    "estimate_measure",
    "f_measures",
    "interval_widths",
    "field_similarity_score",
    "labelling_pool",
    "labels_needed",
    "make_sampler",
    "oracle_from_reference",
    "pool_from_blocks",
    "pool_size_problem",
    "pr_curve",
    "pr_curve_table",
    "predicted_from_clustering",
    "read_log",
    "reuse_estimate",
    "sample_labels",
    "sample_traced",
    "split_blocks",
    "stratify",
]
