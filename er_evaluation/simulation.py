"""Simulation study of the design-based estimators (Binette et al. 2023, §2.4 and §3.1).

A clustering is taken as the truth; a prediction is made from it by *misattribution*:
a fraction ``rate`` of the records, picked at random, each receive the cluster of
another record picked at random (so large clusters collect more errors, as in real
disambiguations). Records are then sampled uniformly with replacement and their true
clusters reviewed (clusters drawn with probability proportional to size), the precision
and recall of the prediction are estimated from each sample, and the estimates are
compared with the exact values: bias, RMSE, mean standard error and the coverage of
every confidence-interval method.

Speed: the per-cluster quantities of the truth against the prediction (f(c), out(c),
|c|, ...) are computed once per rate from one contingency (a census
:func:`~er_evaluation.estimators.unit_table`); each replicate only indexes them by its
sampled clusters and calls :func:`~er_evaluation.estimators.estimate_from_units`, i.e. the
library's own estimators and intervals. The naive baseline (the metric on the reviewed
records alone) is computed with the exact metrics on those records.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from er_evaluation._contingency import contingency
from er_evaluation._progress import progress
from er_evaluation.clustering import validate_membership
from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.estimators import CI_METHODS, UnitTable, estimate_from_units, unit_table
from er_evaluation.metrics import pairwise_precision, pairwise_recall
from er_evaluation.sampling import Sample, benchmark_sample, sample_records

__all__ = [
    "DEFAULT_ESTIMATORS",
    "ERROR_MECHANISMS",
    "StudyResult",
    "merge_entities",
    "misattribute",
    "run_study",
    "split_entities",
    "summarize",
    "zipf_clustering",
]

DEFAULT_ESTIMATORS: tuple[tuple[str, str], ...] = (
    ("pairwise_precision", "naive"),
    ("pairwise_precision", "record"),
    ("pairwise_precision", "cluster_block"),
    ("pairwise_recall", "naive"),
    ("pairwise_recall", "record"),
)
"""(metric, estimator) pairs of the paper's Tables 1-2."""

_KEYS = ["rate", "sample_size", "metric", "estimator"]


def _check_rate(rate: float, keep: float) -> None:
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be in [0, 1], got {rate!r}")
    if not 0.0 <= keep <= 1.0:
        raise ValueError(f"keep must be in [0, 1], got {keep!r}")


def misattribute(clustering: pd.Series, rate: float, *, keep: float = 1.0, seed=None) -> pd.Series:
    """A prediction made from ``clustering`` by misattribution (Binette et al. 2023, §2.4).

    ``round(rate * N)`` records, picked uniformly without replacement, each get the
    cluster id of another record picked uniformly at random (any record but itself, from
    the original clustering). Record ids and their order are kept. A donor may share the
    record's cluster, so slightly fewer than ``rate * N`` assignments actually change.
    ``keep``: share of these moves actually made, in their random order; with the same
    ``seed``, ``keep=0.5`` is a version that fixes half of the errors of ``keep=1``.
    """
    clustering = validate_membership(clustering)
    _check_rate(rate, keep)
    n = len(clustering)
    k = int(round(rate * n))
    if k and n < 2:
        raise ValueError("misattribution needs at least two records")
    rng = np.random.default_rng(seed)
    values = clustering.to_numpy()
    moved = rng.choice(n, size=k, replace=False)
    donor = rng.integers(0, n - 1, size=k)
    donor += donor >= moved  # skip the record itself: uniform over the n - 1 others
    made = int(round(keep * k))
    out = values.copy()
    out[moved[:made]] = values[donor[:made]]
    return pd.Series(out, index=clustering.index, name=clustering.name)


def _size_biased_entities(codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Entity codes in the order a uniform random permutation of the records first reaches
    them: a draw without replacement with probability proportional to size."""
    first = np.full(codes.max() + 1, len(codes), dtype=np.int64)
    np.minimum.at(first, codes[rng.permutation(len(codes))], np.arange(len(codes)))
    return np.argsort(first, kind="stable")


def merge_entities(
    clustering: pd.Series,
    rate: float,
    *,
    group_size: tuple[int, int] = (2, 4),
    keep: float = 1.0,
    seed=None,
) -> pd.Series:
    """A prediction that over-merges whole entities: groups of ``group_size`` (uniform
    between the two bounds) entities of ``clustering`` become one predicted cluster.

    Entities are picked without replacement with probability proportional to their size
    (as misattribution picks its donors, so large entities are merged more often) and
    grouped in the order picked; every entity of a group but its first is *absorbed* into
    the first one's cluster. Groups are formed until ``round(rate * N)`` records are
    absorbed (the last group may pass that count). Record ids and order are kept; the
    merged cluster keeps its first entity's id. ``keep``: share of the groups actually
    merged (with the same ``seed``, ``keep=0.5`` undoes half of the merges).
    """
    clustering = validate_membership(clustering)
    _check_rate(rate, keep)
    lo, hi = group_size
    if not 2 <= lo <= hi:
        raise ValueError(f"group_size must be (lo, hi) with 2 <= lo <= hi, got {group_size!r}")
    rng = np.random.default_rng(seed)
    codes, labels = pd.factorize(clustering.to_numpy())
    target = int(round(rate * len(codes)))
    order = _size_biased_entities(codes, rng)
    sizes = np.bincount(codes)[order]
    g = rng.integers(lo, hi + 1, size=len(order))
    starts = np.cumsum(g) - g
    group = np.repeat(np.arange(len(order)), g)[: len(order)]
    first = starts[group] == np.arange(len(order))
    absorbed = np.cumsum(np.where(first, 0, sizes))
    # the groups needed to reach the target (a group is made whole or not at all)
    reached = np.searchsorted(absorbed, target) if target else -1
    n_groups = 0 if reached < 0 else int(group[min(reached, len(order) - 1)]) + 1
    made = int(round(keep * n_groups))
    in_made = (group < made) & (np.bincount(group, minlength=group.max() + 1)[group] > 1)
    host = order[starts[group]]
    mapping = np.arange(len(labels))
    mapping[order[in_made]] = host[in_made]
    return pd.Series(labels[mapping[codes]], index=clustering.index, name=clustering.name)


def split_entities(
    clustering: pd.Series, rate: float, *, keep: float = 1.0, seed=None
) -> pd.Series:
    """A prediction that splits entities: an entity of s >= 2 records loses a random part
    of k records (k uniform in 1..floor(s/2)) to a new predicted cluster.

    Entities of at least two records are picked without replacement with probability
    proportional to their size and split in that order until ``round(rate * M)`` records
    have moved, M the records of entities with at least two records (the only ones that
    can be split; fewer move when every such entity is split). Record ids and order are
    kept; the new clusters get integer ids above the largest one for integer labels, else
    ids ``"<entity>/split"``. ``keep``: share of the splits actually made (with the same
    ``seed``, ``keep=0.5`` undoes half of them).
    """
    clustering = validate_membership(clustering)
    _check_rate(rate, keep)
    rng = np.random.default_rng(seed)
    codes, labels = pd.factorize(clustering.to_numpy())
    size = np.bincount(codes)
    target = int(round(rate * size[size >= 2].sum()))
    order = _size_biased_entities(codes, rng)
    order = order[size[order] >= 2]
    k = rng.integers(1, size[order] // 2 + 1)
    n_splits = min(int(np.searchsorted(np.cumsum(k), target)) + 1, len(order)) if target else 0
    made = int(round(keep * n_splits))
    moved_count = np.zeros(len(size), dtype=np.int64)
    moved_count[order[:made]] = k[:made]
    # a random rank of every record within its entity: the first k records move
    perm = rng.permutation(len(codes))
    by_entity = perm[np.argsort(codes[perm], kind="stable")]
    rank = np.empty(len(codes), dtype=np.int64)
    rank[by_entity] = np.arange(len(codes)) - np.repeat(np.cumsum(size) - size, size)
    moves = rank < moved_count[codes]
    out = labels[codes].astype(object)
    if np.issubdtype(np.asarray(labels).dtype, np.integer):
        fresh = int(np.max(labels)) + 1 + np.arange(len(size))
        out = labels[codes].copy()
        out[moves] = fresh[codes[moves]]
    else:
        out[moves] = [f"{label}/split" for label in labels[codes[moves]]]
    return pd.Series(out, index=clustering.index, name=clustering.name)


ERROR_MECHANISMS = {
    "misattribute": misattribute,
    "merge": merge_entities,
    "split": split_entities,
}
"""The error mechanisms of the simulations: records misattributed one by one, whole
entities over-merged into one predicted cluster, entities split in two. Each takes
``(clustering, rate, *, keep=1.0, seed=None)``."""


def zipf_clustering(n_records: int, exponent: float, *, max_size: int, seed=None) -> pd.Series:
    """A heavy-tailed clustering of ``n_records`` records (ids 0..n-1): cluster sizes drawn
    from a Zipf distribution of ``exponent`` (P(size = k) ∝ k^-exponent; the smaller the
    exponent, the heavier the tail) capped at ``max_size``, until the records are used up
    (the last cluster is cut to fit)."""
    if exponent <= 1:
        raise ValueError(f"the Zipf exponent must be > 1, got {exponent!r}")
    if max_size < 1 or n_records < 1:
        raise ValueError("n_records and max_size must be >= 1")
    rng = np.random.default_rng(seed)
    sizes = np.minimum(rng.zipf(exponent, size=n_records), max_size)
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), n_records) + 1]
    labels = np.repeat(np.arange(len(sizes)), sizes)[:n_records]
    return pd.Series(labels, index=pd.RangeIndex(n_records, name="record"), name="truth")


@dataclass(frozen=True, eq=False)
class StudyResult:
    """Output of :func:`run_study`.

    - ``truth``: one row per rate: exact ``pairwise_precision``, ``pairwise_recall`` of the prediction and
      the number of records whose cluster changed (``changed``);
    - ``predictions``: the misattributed prediction of each rate (ids and labels of the truth);
    - ``replicates``: one row per (rate, sample_size, replicate, metric, estimator):
      ``value``, ``std_error`` (NaN for the naive baseline), ``truth``;
    - ``intervals``: one row per replicate and interval method: ``ci_low``, ``ci_high``,
      ``covered`` (truth inside the closed interval);
    - ``summary``: per (rate, sample_size, metric, estimator): ``truth``, ``mean``,
      ``bias`` (mean - truth), ``rmse``, ``sd`` of the estimates, ``mean_se``;
    - ``coverage``: per (rate, sample_size, metric, estimator, ci_method): ``coverage``,
      its Monte-Carlo standard error ``mc_se`` = sqrt(c(1-c)/R), the shares of intervals
      wholly ``below`` and wholly ``above`` the truth, ``mean_width``.
    """

    truth: pd.DataFrame
    predictions: dict[float, pd.Series]
    replicates: pd.DataFrame
    intervals: pd.DataFrame
    summary: pd.DataFrame
    coverage: pd.DataFrame
    level: float
    repetitions: int

    def table(self, statistic: str = "bias", metric: str = "pairwise_precision") -> pd.DataFrame:
        """Paper-style table (Tables 1-2): rows = estimators, columns = (rate, sample size)."""
        s = self.summary[self.summary["metric"] == metric]
        return s.pivot_table(
            index="estimator", columns=["rate", "sample_size"], values=statistic, sort=True
        )

    def coverage_table(self, sample_size: int | None = None) -> pd.DataFrame:
        """Coverage by (metric, estimator, ci_method) x rate (one sample size, or all)."""
        c = self.coverage
        if sample_size is not None:
            c = c[c["sample_size"] == sample_size]
        return c.pivot_table(
            index=["metric", "estimator", "ci_method"],
            columns=["rate", "sample_size"],
            values="coverage",
            sort=True,
        )


def _codes(clustering: pd.Series) -> pd.Series:
    """The clustering with records numbered 0..N-1 and clusters by integer codes."""
    return pd.Series(pd.factorize(clustering.to_numpy())[0], name=clustering.name)


def _census(prediction: pd.Series, truth: pd.Series) -> UnitTable:
    """Per-true-cluster quantities of ``prediction``: every true cluster one unit."""
    census = benchmark_sample(truth, weights="cluster_size")
    # a census of the truth's clusters: the prediction is the whole population
    return unit_table(prediction, census, validate=False, check_population=False)


def _units_of(census: UnitTable, sample: Sample) -> UnitTable:
    """The unit table of ``sample``, indexed out of the census (same numbers as
    :func:`~er_evaluation.estimators.unit_table` on the sample, without a contingency)."""
    pos = census.sample.units.get_indexer(sample.units)
    p = np.asarray(sample.probability, dtype=float)
    m = np.asarray(sample.multiplicity, dtype=float)
    return UnitTable(
        # the host view depends on which hosts the sample holds: not indexed from a census
        q={k: v[pos] for k, v in census.q.items() if k != "minority_checked"},
        sample=sample,
        probability=p / (m @ p / m.sum()),
        n_records_population=census.n_records_population,
        predicted_links=census.predicted_links,
        n_pred_clusters=census.n_pred_clusters,
        pred_size_entropy_sum=census.pred_size_entropy_sum,
        n_records_used=sample.n_records,
        dropped_ids=census.dropped_ids,
        links_effective=census.links_effective,
    )


def _naive(prediction: pd.Series, sample: Sample) -> dict[str, float]:
    """Precision and recall computed on the reviewed records alone."""
    ref = sample.reference
    ct = contingency(prediction.reindex(ref.index), ref, validate=False)
    tp, p, t = ct.true_positive_links, ct.predicted_links, ct.true_links
    return {
        "pairwise_precision": tp / p if p else math.nan,
        "pairwise_recall": tp / t if t else math.nan,
    }


def _estimate(ut: UnitTable, metric: str, name: str, level: float, method: str, n_boot: int):
    """One estimate, or None when the interval method does not apply to the estimator
    (Fieller's intervals need a ratio; the record precision is a plain mean)."""
    if method.startswith("fieller") and (metric, name) == ("pairwise_precision", "record"):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return estimate_from_units(
            ut, metric, estimator=name, level=level, ci_method=method, n_boot=n_boot
        )


def run_study(
    truth: pd.Series,
    *,
    rates: Sequence[float] = (0.05, 0.1, 0.2),
    sample_sizes: Sequence[int] = (100, 200, 400),
    repetitions: int = 100,
    estimators: Sequence[tuple[str, str]] = DEFAULT_ESTIMATORS,
    ci_methods: Sequence[str] | None = None,
    level: float = 0.95,
    n_boot: int = 1000,
    seed=None,
    progress: bool = True,
) -> StudyResult:
    """Simulation study of Binette et al. 2023 §2.4 on the true clustering ``truth``.

    For each misattribution ``rate``: a prediction :func:`misattribute` (truth, rate) and
    its exact pairwise precision and recall; then, for each ``sample_size`` n,
    ``repetitions`` samples of n records drawn uniformly with replacement
    (:func:`~er_evaluation.sampling.sample_records`: their true clusters, with
    multiplicities) and every ``(metric, estimator)`` of ``estimators`` (``"naive"`` is the
    metric on the reviewed records alone) with a ``level`` interval for each of
    ``ci_methods`` (default: every method of
    :data:`~er_evaluation.estimators.CI_METHODS`; bootstrap methods use ``n_boot``
    replicates). Returns a :class:`StudyResult` with per-replicate estimates and the
    bias, RMSE, mean SE and interval coverage of each estimator.
    """
    truth = validate_membership(truth, name="truth")
    # metrics do not depend on labels: integer record and cluster codes make every
    # replicate's sampling and grouping an integer operation instead of a string one
    truth_codes = _codes(truth)
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions}")
    if any(int(n) < 2 for n in sample_sizes):
        raise ValueError(f"sample sizes must be >= 2 (a variance needs two draws): {sample_sizes}")
    methods = tuple(CI_METHODS) if ci_methods is None else tuple(ci_methods)
    unknown = [m for m in methods if m not in CI_METHODS]
    if unknown:
        raise ValueError(f"unknown ci_methods {unknown}; choose from {sorted(CI_METHODS)}")
    for metric, _ in estimators:
        if metric not in ("pairwise_precision", "pairwise_recall"):
            raise ValueError(f"the study estimates precision and recall, got metric {metric!r}")

    streams = np.random.SeedSequence(seed).spawn(len(rates))
    bar = _progress(len(rates) * len(sample_sizes) * repetitions, progress)
    truth_rows, rep_rows, ci_rows, predictions = [], [], [], {}
    for rate, stream in zip(rates, streams, strict=True):
        mis_seed, sample_seed = stream.spawn(2)
        predictions[rate] = misattribute(truth, rate, seed=np.random.default_rng(mis_seed))
        prediction = _codes(predictions[rate])
        ct = contingency(prediction, truth_codes, validate=False)
        exact = {
            "pairwise_precision": pairwise_precision(ct),
            "pairwise_recall": pairwise_recall(ct),
        }
        changed = int((predictions[rate].to_numpy() != truth.to_numpy()).sum())
        truth_rows.append({"rate": rate, **exact, "changed": changed})
        census = _census(prediction, truth_codes)
        rng = np.random.default_rng(sample_seed)
        for n in sample_sizes:
            for r in range(repetitions):
                sample = sample_records(truth_codes, int(n), seed=rng)
                ut = _units_of(census, sample)
                naive = _naive(prediction, sample)
                for metric, name in estimators:
                    key = (rate, int(n), r, metric, name)
                    if name == "naive":
                        rep_rows.append((*key, naive[metric], math.nan, exact[metric]))
                        continue
                    e = None
                    for method in methods:
                        e = _estimate(ut, metric, name, level, method, n_boot)
                        if e is not None:
                            ci_rows.append((*key, method, e.ci_low, e.ci_high))
                    if e is None:
                        e = _estimate(ut, metric, name, level, "normal", n_boot)
                    rep_rows.append((*key, e.value, e.std_error, exact[metric]))
                bar.update(1)
    bar.close()

    truth_frame = pd.DataFrame(truth_rows)
    replicates = pd.DataFrame(
        rep_rows, columns=[*_KEYS[:2], "replicate", *_KEYS[2:], "value", "std_error", "truth"]
    )
    intervals = pd.DataFrame(
        ci_rows, columns=[*_KEYS[:2], "replicate", *_KEYS[2:], "ci_method", "ci_low", "ci_high"]
    )
    intervals = intervals.merge(
        replicates[[*_KEYS, "replicate", "truth"]], on=[*_KEYS, "replicate"]
    )
    intervals["covered"] = (intervals["ci_low"] <= intervals["truth"]) & (
        intervals["truth"] <= intervals["ci_high"]
    )
    summary, coverage = summarize(replicates, intervals)
    return StudyResult(
        truth=truth_frame,
        predictions=predictions,
        replicates=replicates,
        intervals=intervals,
        summary=summary,
        coverage=coverage,
        level=level,
        repetitions=repetitions,
    )


def summarize(
    replicates: pd.DataFrame, intervals: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Bias, RMSE, SD and mean SE per (rate, sample_size, metric, estimator), and coverage,
    its Monte-Carlo SE, the shares of misses below and above the truth and the mean width
    per interval method (see :class:`StudyResult`)."""
    d = replicates.assign(
        error=replicates["value"] - replicates["truth"],
        sq=(replicates["value"] - replicates["truth"]) ** 2,
    )
    g = d.groupby(_KEYS, sort=True)
    summary = pd.DataFrame(
        {
            "truth": g["truth"].first(),
            "mean": g["value"].mean(),
            "bias": g["error"].mean(),
            "rmse": np.sqrt(g["sq"].mean()),
            "sd": g["value"].std(ddof=1),
            "mean_se": g["std_error"].mean(),
            "replicates": g["value"].size(),
        }
    ).reset_index()
    iv = intervals.assign(
        width=intervals["ci_high"] - intervals["ci_low"],
        below=intervals["ci_high"] < intervals["truth"],
        above=intervals["ci_low"] > intervals["truth"],
    )
    g = iv.groupby([*_KEYS, "ci_method"], sort=True)
    coverage = pd.DataFrame(
        {
            "coverage": g["covered"].mean(),
            "below": g["below"].mean(),
            "above": g["above"].mean(),
            "mean_width": g["width"].mean(),
            "replicates": g["covered"].size(),
        }
    ).reset_index()
    c = coverage["coverage"]
    coverage.insert(6, "mc_se", np.sqrt(c * (1 - c) / coverage["replicates"]))
    return summary, coverage


def _progress(total: int, enabled: bool):
    return progress(desc="simulation", total=total, unit="sample", show=enabled)
