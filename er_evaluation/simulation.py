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
from tqdm.auto import tqdm

from er_evaluation._contingency import contingency
from er_evaluation.clustering import validate_membership
from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.estimators import CI_METHODS, UnitTable, estimate_from_units, unit_table
from er_evaluation.metrics import pairwise_precision, pairwise_recall
from er_evaluation.sampling import Sample, benchmark_sample, sample_records

__all__ = ["DEFAULT_ESTIMATORS", "StudyResult", "misattribute", "run_study", "summarize"]

DEFAULT_ESTIMATORS: tuple[tuple[str, str], ...] = (
    ("pairwise_precision", "naive"),
    ("pairwise_precision", "record"),
    ("pairwise_precision", "cluster_block"),
    ("pairwise_recall", "naive"),
    ("pairwise_recall", "record"),
)
"""(metric, estimator) pairs of the paper's Tables 1-2."""

_KEYS = ["rate", "sample_size", "metric", "estimator"]


def misattribute(clustering: pd.Series, rate: float, *, seed=None) -> pd.Series:
    """A prediction made from ``clustering`` by misattribution (Binette et al. 2023, §2.4).

    ``round(rate * N)`` records, picked uniformly without replacement, each get the
    cluster id of another record picked uniformly at random (any record but itself, from
    the original clustering). Record ids and their order are kept. A donor may share the
    record's cluster, so slightly fewer than ``rate * N`` assignments actually change.
    """
    clustering = validate_membership(clustering)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be in [0, 1], got {rate!r}")
    n = len(clustering)
    k = int(round(rate * n))
    if k and n < 2:
        raise ValueError("misattribution needs at least two records")
    rng = np.random.default_rng(seed)
    values = clustering.to_numpy()
    moved = rng.choice(n, size=k, replace=False)
    donor = rng.integers(0, n - 1, size=k)
    donor += donor >= moved  # skip the record itself: uniform over the n - 1 others
    out = values.copy()
    out[moved] = values[donor]
    return pd.Series(out, index=clustering.index, name=clustering.name)


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
      its Monte-Carlo standard error ``mc_se`` = sqrt(c(1-c)/R), ``mean_width``.
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
        q={k: v[pos] for k, v in census.q.items()},
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
    its Monte-Carlo SE and the mean width per interval method (see :class:`StudyResult`)."""
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
    iv = intervals.assign(width=intervals["ci_high"] - intervals["ci_low"])
    g = iv.groupby([*_KEYS, "ci_method"], sort=True)
    coverage = pd.DataFrame(
        {
            "coverage": g["covered"].mean(),
            "mean_width": g["width"].mean(),
            "replicates": g["covered"].size(),
        }
    ).reset_index()
    c = coverage["coverage"]
    coverage.insert(6, "mc_se", np.sqrt(c * (1 - c) / coverage["replicates"]))
    return summary, coverage


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, enabled: bool):
    if not enabled:
        return _NoBar()
    return tqdm(total=total, desc="simulation", unit="sample")
