"""Summary statistics of the TRUE clustering, estimated from a reviewed sample of true
clusters, with intervals.

:func:`er_evaluation.summary_statistics` computes these statistics for a full clustering
(a prediction). For the truth only a sample of complete true clusters exists; each
statistic below is a ratio of population totals over true clusters, so it is estimated
like recall (Binette et al. 2023, §2.3, Lemma 2 and Remark 1: design-weighted means of
per-cluster totals, the bias-corrected ratio of eq. 8, the variance of eq. 9 or its
stratified form), with the package's intervals and diagnostics:

- ``average_cluster_size`` = N / K = Σ_c |c| / Σ_c 1;
- ``singleton_cluster_share`` = Σ_c 1[|c| = 1] / Σ_c 1;
- ``matching_rate`` = Σ_c |c| 1[|c| >= 2] / Σ_c |c| (records in clusters of two or more);
- ``homonymy_rate`` = Σ_c 1[c shares a name with another true cluster] / Σ_c 1[c has a
  named record];
- ``name_variation_rate`` = Σ_c 1[c has more than one distinct name] / Σ_c 1[c has a
  named record].

The name statistics follow :func:`er_evaluation.summary_statistics`: a name counts for a
cluster when one of its records has it; records without a name are left out. Whether a
reviewed cluster c shares a name with another true cluster needs only the population's
names: because c is complete, any record named x outside c belongs to another true
cluster, so c is homonymous iff some name x of c is carried by more records of the
population than of c. The names must therefore cover the whole population (the
sample's frame), not just the reviewed records.

A census (every true cluster reviewed) reproduces :func:`er_evaluation.summary_statistics`
of the truth. Median and maximum cluster sizes are not smooth functions of totals and
are not estimated.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from er_evaluation._parameters import check_seed
from er_evaluation.errors import CoverageError, examples
from er_evaluation.estimators._codes import combine_codes
from er_evaluation.estimators._metric_fit import fit, to_estimate
from er_evaluation.estimators.intervals import N_BOOT, check_interval_options
from er_evaluation.estimators.ratio import Column, Ratio
from er_evaluation.estimators.results import estimates_frame
from er_evaluation.estimators.units import UnitTable, normalized_probability
from er_evaluation.sampling import Sample
from er_evaluation.vocabulary import TRUTH_STATISTICS, check_metric_names

__all__ = ["TRUTH_STATISTICS", "estimate_summary", "summary_units", "SUMMARY_RATIOS"]

#: the ratio of per-unit totals behind each statistic
SUMMARY_RATIOS = {
    "average_cluster_size": Ratio(Column("size"), Column("n_clusters")),
    "singleton_cluster_share": Ratio(Column("singletons"), Column("n_clusters")),
    "matching_rate": Ratio(Column("matched"), Column("size")),
    "homonymy_rate": Ratio(Column("homonymous"), Column("named")),
    "name_variation_rate": Ratio(Column("varied"), Column("named")),
}
_NAME_STATISTICS = ("homonymy_rate", "name_variation_rate")


def _name_totals(
    reviewed: pd.Series, cluster: np.ndarray, n_clusters: int, names: pd.Series, sample: Sample
) -> dict[str, np.ndarray]:
    """Per reviewed true cluster: has a named record, has several names, shares a name
    with another true cluster (module docstring)."""
    if not isinstance(names, pd.Series):
        raise TypeError(f"names must be a Series record id -> name, got {type(names).__name__}")
    if names.index.has_duplicates:
        dup = names.index[names.index.duplicated()].unique()
        raise ValueError(f"names: {len(dup)} record id(s) appear more than once: {examples(dup)}")
    pos = names.index.get_indexer(reviewed.index)
    if (pos < 0).any():
        absent = reviewed.index[pos < 0]
        raise CoverageError(
            f"{len(absent)} reviewed record(s) have no entry in names: {examples(absent)}"
        )
    if len(names) <= len(reviewed) and not sample.is_census:
        raise CoverageError(
            f"names holds only the {len(reviewed):,} reviewed records: give the names of the "
            "whole population, which tell whether a reviewed cluster's name is carried by "
            "another true cluster (homonymy)"
        )
    name_code, _ = pd.factorize(names.to_numpy())
    population_count = np.bincount(name_code[name_code >= 0])
    code = name_code[pos]
    named = code >= 0
    cell = combine_codes(cluster[named], code[named])
    in_cluster = np.bincount(cell)
    cell_cluster = np.zeros(len(in_cluster), dtype=np.int64)
    cell_name = np.zeros(len(in_cluster), dtype=np.int64)
    cell_cluster[cell], cell_name[cell] = cluster[named], code[named]
    shared = population_count[cell_name] > in_cluster
    distinct = np.bincount(cell_cluster, minlength=n_clusters)
    return {
        "named": (distinct > 0).astype(float),
        "varied": (distinct > 1).astype(float),
        "homonymous": (np.bincount(cell_cluster, weights=shared, minlength=n_clusters) > 0).astype(
            float
        ),
    }


def _population_records(sample: Sample, names: pd.Series | None) -> int:
    """N, the records of the population, where known; otherwise the reviewed records (a
    scale only: every statistic is a ratio)."""
    if names is not None:
        return len(names)
    if sample.strata is not None and sample.strata.frame == "records":
        return int(sample.strata.frame_size.sum())
    if sample.design == "records" and sample.population_size is not None:
        return int(sample.population_size)
    return sample.n_records


def summary_units(sample: Sample, names: pd.Series | None = None) -> UnitTable:
    """The per-unit totals behind :func:`estimate_summary` (records ``size``, clusters
    ``n_clusters``, ``singletons``, records of clusters of two or more ``matched``; with
    ``names``: clusters with a named record ``named``, with several names ``varied``,
    sharing a name with another true cluster ``homonymous``), one per sampled unit."""
    if sample.sample_of == "predicted":
        raise ValueError(
            "statistics of the true clustering need complete TRUE clusters; a sample of "
            "predicted clusters does not reveal them"
        )
    reviewed = sample.reference
    cluster, _ = pd.factorize(reviewed.to_numpy())
    size = np.bincount(cluster).astype(float)
    per_cluster = {
        "size": size,
        "n_clusters": np.ones(len(size)),
        "singletons": (size == 1).astype(float),
        "matched": size * (size >= 2),
    }
    if names is not None:
        per_cluster.update(_name_totals(reviewed, cluster, len(size), names, sample))
    unit = sample.units.get_indexer(sample.unit_of_record.reindex(reviewed.index).to_numpy())
    unit_of_cluster = np.zeros(len(size), dtype=np.int64)
    unit_of_cluster[cluster] = unit
    n_units = len(sample.units)
    q = {
        k: np.bincount(unit_of_cluster, weights=v, minlength=n_units)
        for k, v in per_cluster.items()
    }
    return UnitTable(
        q=q,
        sample=sample,
        probability=normalized_probability(sample),
        n_records_population=_population_records(sample, names),
        predicted_links=0,
        n_pred_clusters=0,
        pred_size_entropy_sum=0.0,
        n_records_used=sample.n_records,
        dropped_ids=pd.Index([]),
    )


def estimate_summary(
    sample: Sample,
    names: pd.Series | None = None,
    statistics: Iterable[str] | None = None,
    *,
    level: float = 0.95,
    ci_method: str | None = None,
    n_boot: int = N_BOOT,
    seed=0,
) -> pd.DataFrame:
    """Estimates of summary statistics of the true clustering from a reviewed ``sample``
    of true clusters (module docstring), one row each in the tidy table of
    :func:`~er_evaluation.estimators.estimate_table` (``prediction`` empty, ``metric`` the
    statistic's name, as :func:`er_evaluation.summary_statistics` names it).

    ``names``: the name of every record of the population (Series record id -> name, NaN
    for no name), needed for ``homonymy_rate`` and ``name_variation_rate``.
    ``statistics``: names of :data:`~er_evaluation.vocabulary.TRUTH_STATISTICS` (default:
    all of them, the name statistics only with ``names``). ``level``, ``ci_method``,
    ``n_boot``, ``seed``: as for :func:`~er_evaluation.estimators.estimate`. The estimator
    is "cluster" ("block" for a sample of blocks): every statistic is a ratio of totals
    over the sampled units, divided by their selection probabilities.
    """
    if statistics is None:
        statistics = [s for s in TRUTH_STATISTICS if names is not None or s not in _NAME_STATISTICS]
    statistics = check_metric_names(statistics, TRUTH_STATISTICS, what="truth statistic")
    if names is None and set(statistics) & set(_NAME_STATISTICS):
        raise ValueError("homonymy_rate and name_variation_rate need the records' names (names=)")
    level, ci_method, n_boot = check_interval_options(level, ci_method, n_boot)
    seed = check_seed(seed)
    ut = summary_units(sample, names)
    estimator = "block" if ut.unit_kind == "block" else "cluster"
    rows = []
    for statistic in statistics:
        phi = SUMMARY_RATIOS[statistic]
        f = fit(ut, phi, {c: ut.weighted(c) for c in phi.columns()}, naive=False)
        rows.append(
            to_estimate(
                f,
                ut,
                metric=statistic,
                estimator=estimator,
                level=level,
                ci_method=ci_method,
                naive=False,
                name=None,
                bounds=None if statistic == "average_cluster_size" else (0.0, 1.0),
                n_boot=n_boot,
                seed=seed,
            )
        )
    return estimates_frame(rows)
