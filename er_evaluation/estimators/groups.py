"""Precision, recall and F1 per subgroup of records, with intervals, paired differences
and a test of equality across groups.

Each record of the population belongs to one group (name origin, country, era, field,
...). A group's metrics count the links with **both records in the group**: with T_g and
P_g the true and predicted links inside group g,

    precision_g = |T_g ∩ P_g| / |P_g|,   recall_g = |T_g ∩ P_g| / |T_g|

(the pairwise metrics of the prediction and the truth restricted to the group's records).
The links whose two records are in different groups form their own row, ``ACROSS``
(``"(across groups)"``): T and P are the disjoint unions of the groups' links and the
links across groups.

Every reviewed true cluster c splits into its parts c ∩ g, and the per-cluster totals of
the estimators (Binette et al. 2023, §2.3 and appendix A.2: f(c), C(|c|, 2), the predicted
links inside and leaving c) are taken on each part: ``f_g(c) = Σ_ĉ C(|c ∩ ĉ ∩ g|, 2)``,
``C(|c ∩ g|, 2)``, and the predicted links of group g leaving c,
``Σ_ĉ |c ∩ ĉ ∩ g| (|ĉ ∩ g| - |c ∩ ĉ ∩ g|)``. So each group's precision, recall and F1 is
the package's estimator of the same metric (cluster-block precision, record or cluster
recall, their F-measure, or the estimator asked for), on the same draws with the same
selection probabilities, with the same intervals and diagnostics; |P_g| and the sizes
|ĉ ∩ g| come from the full prediction and the groups of all its records. The sampled unit
and its probability stay those of the whole true cluster (its size |c| for records
sampled uniformly), so a group of few reviewed records gets an honest, wide interval and
its diagnostics say so.

A group's false links can be rare and sit in a few predicted clusters that a sample
misses; it then estimates a precision near 1 with an interval that misses the truth. With
uniform record draws two checks flag such an estimate (``reliable`` False, the reason in
words): the hosts' view of the group's own predicted clusters ĉ ∩ g
(:func:`~er_evaluation.estimators.diagnostics.host_view_value`), and, for precision and
F-scores and their paired differences, more than :data:`UNREVIEWED_SHARE` of the group's
predicted links in large clusters ĉ ∩ g (each at least 1/n of them) that no reviewed
record reaches and that are few (fewer than :data:`UNREVIEWED_CLUSTERS` effective ones).
The row of the links across groups has the same two checks on the predicted clusters ĉ
and their links across groups ``X(ĉ) = C(|ĉ|, 2) - Σ_g C(|ĉ ∩ g|, 2)``: the hosts' view
with the half-links across groups ``(|ĉ| - |ĉ ∩ g|)/2`` of each foreign record of group
g, and large unreached clusters worth fewer than :data:`UNREVIEWED_CLUSTERS_ACROSS`.
Measured in benchmarks/README.md ("Blocking, subgroups and the truth's statistics"): they
flag 59% of the misses of the PatentsView cells below 93% coverage and 11.2% of the
replicates of cells in band; 55% and 2.3% on the heavy-tailed truth, where the links
across groups are flagged in 44% of their misses (75% of those from over-merged entities,
18% of those from misattributed records, whose cells cover 89-93%). Recall is covered by
neither check; the rule tried for it (each side of the ratio on at least 8 effective
units) caught 30-36% of its misses and flagged 7-86% of its replicates in band.

The groups' estimates come from one sample and are correlated. Their joint covariance is
the delta method on the stacked per-unit columns of all groups (as for a paired
difference); :func:`group_equality_test` uses it for a Wald test of equality across groups
(H0: the metric is the same in every group with a defined estimate; statistic
``d' (C Σ C')^+ d`` with ``d = C θ̂`` the differences from the last group), referred to
Hotelling's F on the effective units of the group the fewest units carry (a chi-square
reference is anti-conservative there: measured sizes up to 64% at a nominal 5%). Its
size under H0 and its power are measured in benchmarks/README.md ("Blocking, subgroups
and the truth's statistics").

Groups come from an in-memory prediction (a pandas Series): the refined clusterings
(ĉ, g) and (c, g) go through the package's one contingency kernel.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.special import fdtrc

from er_evaluation._contingency import contingency
from er_evaluation._contingency_table import comb2, xlogx
from er_evaluation._parameters import check_beta
from er_evaluation._record_ids import positions
from er_evaluation.engines import as_table
from er_evaluation.errors import (
    CoverageError,
    UndefinedMetricWarning,
    UnreliableEstimateWarning,
    examples,
    warn,
)
from er_evaluation.estimators._codes import combine_codes
from er_evaluation.estimators._metric_fit import fit, metric_function, result_label
from er_evaluation.estimators.api import (
    _check_baseline,
    _check_options,
    _check_population_options,
    _units,
    estimate_from_units,
)
from er_evaluation.estimators.diagnostics import (
    MIN_EFFECTIVE_UNITS,
    concentration,
    event_columns,
)
from er_evaluation.estimators.intervals import N_BOOT
from er_evaluation.estimators.paired import paired_difference
from er_evaluation.estimators.pairwise import PAIRWISE_METRICS
from er_evaluation.estimators.ratio import Linear, bias_corrected
from er_evaluation.estimators.results import Estimate, estimates_frame
from er_evaluation.estimators.stratified import StratifiedFit
from er_evaluation.estimators.units import UnitTable, _host_view, _kish, _quantities
from er_evaluation.sampling import Sample
from er_evaluation.vocabulary import check_metric_names

__all__ = [
    "ACROSS",
    "UNREVIEWED_CLUSTERS",
    "UNREVIEWED_CLUSTERS_ACROSS",
    "UNREVIEWED_SHARE",
    "GROUP_METRICS",
    "compare_by_group",
    "effective_units",
    "equality_p_value",
    "equality_statistic",
    "estimate_by_group",
    "group_equality_test",
    "group_metrics",
    "group_unit_tables",
]

ACROSS = "(across groups)"
"""The ``group`` of the row for the links whose two records are in different groups."""

ACROSS_UNDEFINED = (
    "undefined: no predicted or no true link across groups carries weight in this sample"
)
"""The reason an undefined row of the links across groups carries. That row comes with
every breakdown whether or not the user wants it, so, as for the components of an
F-measure the user did not ask for, it is NaN with this reason and no warning."""


GROUP_METRICS = PAIRWISE_METRICS
"""Metrics estimable per group: the pairwise ones (a link is in a group when both its
records are)."""

UNREVIEWED_SHARE = 0.25
"""Share of a group's predicted links in its large predicted clusters (each holding at
least 1/n of the group's predicted links, n the sample's draws) that no reviewed record
reaches, above which the group's precision and F-scores (and their paired differences)
are flagged not reliable when those clusters are few (:data:`UNREVIEWED_CLUSTERS`):
their errors, if any, are out of the sample's sight, and the reached clusters cannot
stand for them. Chosen on the PatentsView truth of the breakdown benchmark and checked on
the others (benchmarks/README.md, "Blocking, subgroups and the truth's statistics"). The
row of the links across groups applies it to their links in the predicted clusters."""

UNREVIEWED_CLUSTERS = 15.0
"""Effective number (Kish) of the unreached large predicted clusters of a group, weighted
by their links, below which :data:`UNREVIEWED_SHARE` applies: many unreached clusters of
about the same size are what a sample reaching some of them represents (singleton-heavy
truths), a few that hold the links are not."""

UNREVIEWED_CLUSTERS_ACROSS = 2.5
"""For the links across groups: the effective number of unreached large predicted
clusters, weighted by their links across groups, below which :data:`UNREVIEWED_SHARE`
applies. A link across groups needs a predicted cluster mixing groups, so these links sit
in few clusters and a sample missing some of them is ordinary; only when the unreached
ones are worth fewer than 2.5 equally large clusters do the reached ones fail to stand
for them. Chosen on the heavy-tailed truth of the breakdown benchmark (the smallest value
catching nearly the misses the groups' limit catches: 283 against 285), checked on PatentsView
(benchmarks/README.md, "Blocking, subgroups and the truth's statistics")."""

_DEFAULT = ("pairwise_precision", "pairwise_recall", "pairwise_f1")
# per-unit totals taken on each group's part of the true clusters; the rest of a group's
# table (size, n_clusters) stays that of the whole sampled unit, which the design drew
_PARTS = ("tp", "pairs", "plinks", "pout")


@dataclass(frozen=True, eq=False)
class _Groups:
    """The groups once coded: the records' ids, their group codes (-1: missing) and the
    labels (sorted when they can be), shared by every prediction of a call."""

    index: pd.Index
    codes: np.ndarray
    labels: pd.Index

    @classmethod
    def of(cls, groups) -> _Groups:
        if isinstance(groups, _Groups):
            return groups
        if not isinstance(groups, pd.Series):
            raise TypeError(
                f"groups must be a pandas Series record id -> group, got {type(groups).__name__}"
            )
        if groups.index.has_duplicates:
            dup = groups.index[groups.index.duplicated()].unique()
            raise ValueError(
                f"groups: {len(dup)} record id(s) appear more than once: {examples(dup)}"
            )
        try:
            codes, labels = pd.factorize(groups.to_numpy(), sort=True)
        except TypeError:  # labels of mixed types: order of first appearance
            codes, labels = pd.factorize(groups.to_numpy())
        return cls(groups.index, codes.astype(np.int64), pd.Index(labels))

    def of_records(self, ids: pd.Index) -> np.ndarray:
        """Group code of every record of ``ids``; each needs a non-missing group."""
        pos = positions(self.index, ids)
        if (pos < 0).any():
            absent = ids[pos < 0]
            raise CoverageError(
                f"{len(absent)} record(s) of the prediction have no group: {examples(absent)}; "
                "every record of the population needs one (a group's predicted links are "
                "counted on the whole prediction)"
            )
        codes = self.codes[pos]
        if (codes < 0).any():
            raise ValueError(
                f"{int((codes < 0).sum())} record(s) have a missing group: "
                f"{examples(ids[codes < 0])}"
            )
        return codes


def _refined_population(prediction: pd.Series, g: np.ndarray, G: int):
    """The prediction refined by group (clusters ĉ ∩ g) and, per group, its links, number of
    clusters, entropy sum and Kish size of the links; the same for the links across groups."""
    pred_code, _ = pd.factorize(prediction.array)
    refined = pred_code.astype(np.int64) * G + g
    cell, keys = pd.factorize(refined)
    size = np.bincount(cell)
    keys = np.asarray(keys, dtype=np.int64)
    group, parent = keys % G, keys // G
    links = comb2(size).astype(float)
    totals = {
        "links": np.bincount(group, weights=links, minlength=G),
        "links_squared": np.bincount(group, weights=links**2, minlength=G),
        "clusters": np.bincount(group, minlength=G),
        "entropy": np.bincount(group, weights=xlogx(size), minlength=G),
    }
    pred_size = np.bincount(pred_code)
    cross = comb2(pred_size) - np.bincount(parent, weights=links, minlength=len(pred_size))
    across = {"links": float(cross.sum()), "links_squared": float((cross**2).sum())}
    totals["cells"] = (cell, links, size, group)
    across["cells"] = (pred_code, cross.astype(float), pred_size, np.zeros(len(cross), np.int64))
    return pd.Series(refined, index=prediction.index), totals, across


def _unreviewed_links(cells, reviewed: np.ndarray, G: int, n_draws: int):
    """Per owner g of the cells (a group's clusters ĉ ∩ g, or the predicted clusters ĉ
    with their links across groups): the share of g's predicted links in the cells that
    each hold at least 1/``n_draws`` of them and that no reviewed record reaches
    (``reviewed``: the positions of the reviewed records), the effective number (Kish) of
    those cells weighted by their links, and their records. ``cells``: the cell of every
    record, and per cell its links, records and owner."""
    cell, links, size, group = cells
    total = np.bincount(group, weights=links, minlength=G)[group]
    share = links / np.where(total > 0, total, 1.0)
    unseen = (links > 0) & (share >= 1.0 / n_draws)
    unseen[np.unique(cell[reviewed])] = False
    out = np.bincount(group, weights=np.where(unseen, share, 0.0), minlength=G)
    squares = np.bincount(group, weights=np.where(unseen, share * share, 0.0), minlength=G)
    return (
        out,
        out * out / np.where(squares > 0, squares, 1.0),
        np.bincount(group, weights=np.where(unseen, size, 0), minlength=G).astype(np.int64),
    )


def _host_view_across(ct, cells, G: int, unit_of_ref: np.ndarray, n_units: int):
    """The hosts' view (:func:`~er_evaluation.estimators.diagnostics.host_view_value`) of
    the links across groups: per unit, the links across groups of its records sitting as a
    minority in a predicted cluster ĉ whose host (the entity holding more than half of ĉ)
    is also a sampled unit, ``Σ |ĉ ∩ u ∩ g| x(ĉ, g)`` with ``x(ĉ, g) = (|ĉ| - |ĉ ∩ g|)/2``
    the half-links across groups of a record of group g in ĉ; and the links across groups
    of the foreign records of the clusters it hosts as it counts them, ``Σ_{ĉ hosted by u}
    (X(ĉ) - Σ_g |ĉ ∩ u ∩ g| x(ĉ, g))`` with X(ĉ) the links across groups of ĉ. ``ct``: the
    contingency of the group-refined prediction and reviewed clusters; ``cells``: per
    predicted cluster of the full prediction, its links across groups and its size."""
    _, cross, size, _ = cells
    label = np.asarray(ct.pred_labels, dtype=np.int64)[ct.pred]
    parent, n_cg = label // G, ct.pred_size[ct.pred].astype(float)
    unit = unit_of_ref[ct.ref] // G
    count = ct.count.astype(float)
    full = size[parent].astype(float)
    x = count * (full - n_cg) / 2
    codes, keys = pd.factorize(parent * n_units + unit)
    inter = np.bincount(codes, weights=count)[codes]
    seen_cross = np.bincount(codes, weights=x)
    keys = np.asarray(keys, dtype=np.int64)
    key_parent, key_unit = keys // n_units, keys % n_units
    host = 2 * np.bincount(codes, weights=count) > size[key_parent]
    checked = np.isin(parent, key_parent[host]) & (2 * inter < full)
    minority = np.bincount(unit, weights=np.where(checked, x, 0.0), minlength=n_units)
    hosted = np.bincount(
        key_unit[host], weights=cross[key_parent[host]] - seen_cross[host], minlength=n_units
    )
    return minority, float(hosted.sum())


def group_unit_tables(
    prediction: pd.Series,
    sample: Sample,
    groups: pd.Series,
    *,
    on_missing: str = "error",
    validate: bool = True,
) -> dict:
    """One :class:`~er_evaluation.estimators.UnitTable` per group (keyed by group label, in
    sorted order) and one for the links across groups (key :data:`ACROSS`), each holding
    the pairwise per-unit totals of its links (module docstring) on the sample's units.

    ``prediction``: the full prediction (a pandas Series); ``groups``: the group of every
    record of the prediction (a Series record id -> label; a record without a group is an
    error naming it). ``on_missing``: as for :func:`~er_evaluation.estimators.estimate`.
    """
    if as_table(prediction, "prediction") is not None:
        raise TypeError(
            "subgroup estimates need the prediction in memory (a pandas Series); this one "
            "is held by an engine"
        )
    if sample.sample_of == "predicted":
        raise ValueError(
            "subgroup estimates need reviewed TRUE clusters (a sample of records, clusters "
            "or blocks), not a sample of predicted clusters"
        )
    ut = _units(prediction, sample, on_missing, validate)
    s = ut.sample
    coded = _Groups.of(groups)
    g_pop, labels = coded.of_records(prediction.index), coded.labels
    G = len(labels)
    refined_pred, totals, across = _refined_population(prediction, g_pop, G)
    reviewed = s.reference
    pos = positions(prediction.index, reviewed.index)
    keep = pos >= 0  # records absent from the prediction: dropped by the unit table too
    ids = reviewed.index[keep]
    g_rev = g_pop[pos[keep]]
    ref_code, _ = pd.factorize(reviewed.to_numpy()[keep])
    refined_ref = pd.Series(ref_code.astype(np.int64) * G + g_rev, index=ids)
    ct = contingency(refined_pred, refined_ref, scope="prediction", validate=False)
    n_units = len(s.units)
    unit = s.units.get_indexer(s.unit_of_record.reindex(ids).to_numpy())
    unit_of_ref = np.zeros(ct.n_ref_clusters, dtype=np.int64)
    unit_of_ref[ct.ref_labels.get_indexer(refined_ref.to_numpy())] = unit * G + g_rev
    q = _quantities(ct, ct.pred_size, unit_of_ref, n_units * G)
    parts = {k: q[k].reshape(n_units, G) for k in _PARTS}
    # the hosts' view of each group's predicted clusters ĉ ∩ g (as for the whole prediction)
    minority, hosted = _host_view(ct, ct.pred_size, unit_of_ref, n_units * G)
    minority, hosted = minority.reshape(n_units, G), hosted.reshape(n_units, G).sum(axis=0)
    reviewed_per_group = np.bincount(g_rev, minlength=G)
    unreviewed = unreviewed_across = None
    if s.strata is None and s.weights == "cluster_size" and ut.unit_kind == "cluster":
        # measured for uniform record draws only, as the hosts' view
        unreviewed = _unreviewed_links(totals["cells"], pos[keep], G, s.n_draws)
        unreviewed_across = tuple(
            x[0] for x in _unreviewed_links(across["cells"], pos[keep], 1, s.n_draws)
        )
    out = {}
    for j, label in enumerate(labels):
        out[label] = _table(
            ut,
            {**{k: parts[k][:, j] for k in _PARTS}, "minority_checked": minority[:, j]},
            links=totals["links"][j],
            links_squared=totals["links_squared"][j],
            clusters=int(totals["clusters"][j]),
            entropy=float(totals["entropy"][j]),
            n_records=int(reviewed_per_group[j]),
            host_minority=float(hosted[j]),
            unreviewed_links=None
            if unreviewed is None
            else (float(unreviewed[0][j]), float(unreviewed[1][j]), int(unreviewed[2][j])),
        )
    minority_across, hosted_across = _host_view_across(ct, across["cells"], G, unit_of_ref, n_units)
    out[ACROSS] = _table(
        ut,
        {
            **{k: ut.q[k] - parts[k].sum(axis=1) for k in _PARTS},
            "minority_checked": minority_across,
        },
        links=across["links"],
        links_squared=across["links_squared"],
        clusters=ut.n_pred_clusters,
        entropy=ut.pred_size_entropy_sum,
        n_records=ut.n_records_used,
        host_minority=hosted_across,
        unreviewed_links=None
        if unreviewed_across is None
        else (float(unreviewed_across[0]), float(unreviewed_across[1]), int(unreviewed_across[2])),
    )
    return out


def _table(
    ut: UnitTable,
    parts: dict,
    *,
    links,
    links_squared,
    clusters,
    entropy,
    n_records,
    host_minority: float = 0.0,
    unreviewed_links: tuple[float, float, int] | None = None,
):
    q = {"size": ut.q["size"], "n_clusters": ut.q["n_clusters"], **parts}
    return replace(
        ut,
        q=q,
        predicted_links=int(round(links)),
        n_pred_clusters=clusters,
        pred_size_entropy_sum=entropy,
        n_records_used=n_records,
        naive=None,
        links_effective=_kish(links, links_squared),
        host_minority=host_minority,
        size_histogram=None,
        unreviewed_links=unreviewed_links,
    )


def _check_estimator(estimator: str | None) -> None:
    if estimator is not None and "naive" in estimator.split("+"):
        raise ValueError(
            "the naive estimator is not available per group; use a design-based one "
            "(the default, or 'record', 'cluster', 'cluster_block', 'block')"
        )


def _named(predictions) -> dict[str, pd.Series]:
    if isinstance(predictions, pd.Series):
        return {
            str(predictions.name) if predictions.name is not None else "prediction": predictions
        }
    return {str(k): v for k, v in predictions.items()}


def estimate_by_group(
    predictions: Mapping[str, pd.Series] | pd.Series,
    sample: Sample,
    groups: pd.Series,
    metrics: Iterable[str] = _DEFAULT,
    *,
    estimator: str | None = None,
    level: float = 0.95,
    ci_method: str | None = None,
    on_missing: str = "error",
    beta: float = 1.0,
    n_boot: int = N_BOOT,
    seed=0,
    validate: bool = True,
) -> pd.DataFrame:
    """Precision, recall and F1 of every prediction in every group of records (a group's
    links are those with both records in it; module docstring), and of the links across
    groups, from one reviewed ``sample`` of true clusters.

    Returns the tidy table of :func:`~er_evaluation.estimators.estimate_table` with a
    ``group`` column after ``prediction``: one row per (prediction, group, metric), the
    groups in sorted order, then :data:`ACROSS`. ``groups``: the group of every record of
    the population (Series record id -> label). ``metrics``: names of
    :data:`GROUP_METRICS`; the other arguments as for
    :func:`~er_evaluation.estimators.estimate` (the naive estimator is not available).
    A group's estimate (or that of the links across groups) is flagged not reliable, with
    a warning saying why, when its sample cannot see its errors (module docstring). An
    undefined group warns (:class:`~er_evaluation.errors.UndefinedMetricWarning`); an
    undefined row of the links across groups, which the user does not ask for, is NaN
    with :data:`ACROSS_UNDEFINED` as its reason and no warning.
    """
    metrics = check_metric_names(metrics, GROUP_METRICS, what="per-group metric")
    _check_estimator(estimator)
    options = _check_options(level=level, ci_method=ci_method, beta=beta, n_boot=n_boot, seed=seed)
    on_missing, validate = _check_population_options(on_missing, validate)
    rows, labels = [], []
    groups = _Groups.of(groups)
    for name, prediction in _named(predictions).items():
        tables = group_unit_tables(
            prediction, sample, groups, on_missing=on_missing, validate=validate
        )
        for label, ut in tables.items():
            for metric in metrics:
                e = _quiet_across(
                    label,
                    estimate_from_units,
                    ut,
                    metric,
                    estimator=estimator,
                    name=f"{name}, group {label}",
                    **options,
                )
                e = _unreviewed_check(e, metric, label, sample.n_draws, ut)
                rows.append(replace(e, prediction=name))
                labels.append(label)
    return _with_groups(rows, labels)


def _quiet_across(label, compute: Callable[..., Estimate], *args, **kwargs) -> Estimate:
    """``compute(*args, **kwargs)``; for the links across groups (:data:`ACROSS`) an
    undefined estimate is NaN without an :class:`~er_evaluation.errors.UndefinedMetricWarning`,
    not reliable, with :data:`ACROSS_UNDEFINED` as its reason (other warnings are kept)."""
    if label != ACROSS:
        return compute(*args, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        e = compute(*args, **kwargs)
    if math.isfinite(e.value):
        return e
    return replace(e, diagnostics=replace(e.diagnostics, reliable=False, reason=ACROSS_UNDEFINED))


def _unreviewed_check(e: Estimate, metric: str, label, n_draws: int, *tables) -> Estimate:
    """``e`` flagged not reliable (with a warning saying why) when it rests on the group's
    predicted links (every metric but recall) and more than :data:`UNREVIEWED_SHARE` of
    them sit in fewer than :data:`UNREVIEWED_CLUSTERS` effective large predicted clusters
    (:data:`UNREVIEWED_CLUSTERS_ACROSS` for the links across groups) that no reviewed record
    reaches (in any of the ``tables``, one per prediction of a difference)."""
    few = UNREVIEWED_CLUSTERS_ACROSS if label == ACROSS else UNREVIEWED_CLUSTERS
    seen = [
        t.unreviewed_links
        for t in tables
        if t.unreviewed_links is not None
        and t.unreviewed_links[0] > UNREVIEWED_SHARE
        and t.unreviewed_links[1] < few
    ]
    if metric == "pairwise_recall" or not e.reliable or not seen:
        return e
    share, clusters, records = max(seen)
    links, whose = (
        ("links across groups", "")
        if label == ACROSS
        else (f"predicted links of group {label!r}", "the group's ")
    )
    reason = (
        f"{share:.0%} of the {links} sit in large predicted clusters (each at least "
        f"1/{n_draws} of them; worth {clusters:.1f} equally large ones) that no reviewed "
        f"record reaches: the sample cannot see their errors, and the interval misses them "
        f"when they are many; review {whose}{records:,} records in those clusters"
    )
    warn(f"{metric} of {e.prediction} is not reliable: {reason}", UnreliableEstimateWarning)
    return replace(e, diagnostics=replace(e.diagnostics, reliable=False, reason=reason))


def _with_groups(rows, labels) -> pd.DataFrame:
    frame = estimates_frame(rows)
    frame.insert(1, "group", pd.Series(labels, dtype=object))
    return frame


def compare_by_group(
    predictions: Mapping[str, pd.Series],
    sample: Sample,
    groups: pd.Series,
    metrics: Iterable[str] = _DEFAULT,
    *,
    baseline: str | None = None,
    estimator: str | None = None,
    level: float = 0.95,
    ci_method: str | None = None,
    on_missing: str = "error",
    beta: float = 1.0,
    n_boot: int = N_BOOT,
    seed=0,
    validate: bool = True,
) -> pd.DataFrame:
    """Paired differences ``metric(other) - metric(baseline)`` within every group (and
    across groups) on the same sample, as :func:`~er_evaluation.estimators.compare` gives
    them for the whole population (joint delta method on the stacked per-unit columns of
    the two predictions). ``baseline`` defaults to the first prediction. One row per
    (difference, group, metric), with a ``group`` column; metric names end in
    " difference". Undefined rows as in :func:`estimate_by_group`."""
    named = _named(predictions)
    baseline = _check_baseline(list(named), baseline, "compare_by_group")
    metrics = check_metric_names(metrics, GROUP_METRICS, what="per-group metric")
    _check_estimator(estimator)
    options = _check_options(level=level, ci_method=ci_method, beta=beta, n_boot=n_boot, seed=seed)
    on_missing, validate = _check_population_options(on_missing, validate)
    groups = _Groups.of(groups)
    tables = {
        k: group_unit_tables(p, sample, groups, on_missing=on_missing, validate=validate)
        for k, p in named.items()
    }
    rows, labels = [], []
    for name in named:
        if name == baseline:
            continue
        for label in tables[baseline]:
            for metric in metrics:
                e = _quiet_across(
                    label,
                    paired_difference,
                    tables[name][label],
                    tables[baseline][label],
                    metric,
                    estimator=estimator,
                    names=(name, f"{baseline}, group {label}"),
                    **options,
                )
                e = _unreviewed_check(
                    e, metric, label, sample.n_draws, tables[name][label], tables[baseline][label]
                )
                rows.append(
                    replace(
                        e,
                        prediction=f"{name} - {baseline}",
                        metric=f"{result_label(metric, beta)} difference",
                    )
                )
                labels.append(label)
    return _with_groups(rows, labels)


_ROUNDING = 1e-12
_ROUNDING_VARIANCE = 1e-10


def effective_units(Y: np.ndarray, phi, names) -> np.ndarray:
    """Effective number of units carrying an estimate, for the equality test: the smallest
    Kish size (:mod:`~er_evaluation.estimators.diagnostics`) of its columns and of both sides
    of each of its ratios (correct part and errors), sides with a zero total left out (they
    carry no variance). ``Y``: draws (..., n, k) of the columns ``names``."""
    n_eff, _ = concentration(Y)
    sides = [Y[..., b] for b, _ in event_columns(phi, names)]
    sides += [Y[..., a] - Y[..., b] for b, a in event_columns(phi, names)]
    if not sides:
        return n_eff
    S = np.abs(np.stack(sides, axis=-1))
    s1, s2 = S.sum(axis=-2), (S * S).sum(axis=-2)
    kish = np.where(s2 > 0, s1 * s1 / np.where(s2 > 0, s2, 1.0), np.inf)
    return np.minimum(n_eff, kish.min(axis=-1))


def equality_statistic(values, grads, V, center=0.0):
    """Wald statistic and its degrees of freedom for H0 "``values`` - ``center`` contrasts
    are zero", vectorised over leading axes: ``values`` (..., G) estimates, ``grads``
    (..., G, k) their gradients over the k column means, ``V`` (..., k, k) the covariance
    of the means; ``d = C values - center`` (C: each group minus the last) and
    ``W = d' (C G V G' C')^+ d`` on the eigen-directions of ``C G V G' C'`` above rounding
    (``df`` of them). A difference in a direction without variance (a census, or groups
    no draw tells apart) gives ``W = inf`` (0 when the difference is 0 too)."""
    values = np.asarray(values, dtype=float)
    G = values.shape[-1]
    C = np.eye(G)[:-1] - np.eye(G)[-1]
    d = np.einsum("ag,...g->...a", C, values) - center
    sigma = np.einsum("...gi,...ij,...hj->...gh", grads, V, grads)
    S = np.einsum("ag,...gh,bh->...ab", C, sigma, C)
    finite = np.isfinite(S).all(axis=(-1, -2)) & np.isfinite(d).all(axis=-1)
    S = np.where(finite[..., None, None], S, 0.0)
    d = np.where(finite[..., None], d, 0.0)
    lam, U = np.linalg.eigh(S)
    # rounding in G V G' is relative to |g|² |V|; a real contrast variance is far above it
    tol = _ROUNDING_VARIANCE * np.abs(grads).max(axis=(-1, -2)) ** 2 * np.abs(V).max(axis=(-1, -2))
    keep = lam > tol[..., None]
    u = np.einsum("...ab,...a->...b", U, d)
    with np.errstate(divide="ignore", invalid="ignore"):
        W = np.where(keep, u * u / np.where(keep, lam, 1.0), 0.0).sum(axis=-1)
    rest = np.where(keep, 0.0, np.abs(u)).max(axis=-1)
    exact = rest > _ROUNDING * (1 + np.abs(values).max(axis=-1))
    W = np.where(exact, np.inf, W)
    return np.where(finite, W, np.nan), np.where(finite, keep.sum(axis=-1), 0)


def equality_p_value(W, df, nu):
    """p-value of the Wald statistic ``W`` on ``df`` degrees of freedom against Hotelling's
    F with ``nu`` (effective units - 1) degrees of freedom for the covariance:
    ``W (nu - df + 1) / (df nu) ~ F(df, nu - df + 1)``; NaN where ``nu - df + 1 <= 0``
    (too few effective units to test), 0 for ``W = inf``, 1 for ``df = 0`` and ``W = 0``."""
    W, df, nu = (np.asarray(x, dtype=float) for x in (W, df, nu))
    d2 = nu - df + 1
    with np.errstate(divide="ignore", invalid="ignore"):
        F = W * d2 / (df * nu)
        p = fdtrc(np.maximum(df, 1), np.where(d2 > 0, d2, 1.0), F)
    p = np.where(d2 > 0, p, np.nan)
    p = np.where(np.isinf(W), 0.0, p)
    return np.where((df == 0) & (W == 0), 1.0, p)


def _joint(parts: list, ut: UnitTable):
    """Estimates, gradients, covariance of the means and effective units (minus one) of
    the smooth functions ``parts`` ((phi, columns) per group, columns prefixed apart) on
    one sample."""
    phis = [phi for phi, _ in parts]
    columns = {k: v for _, cols in parts for k, v in cols.items()}
    f = fit(ut, Linear([1.0] * len(phis), phis), columns, naive=False)
    if isinstance(f, StratifiedFit) and f.ratio == "separate":
        raise ValueError(
            "the equality test uses the combined ratio estimator's joint covariance; this "
            "sample's strata use the separate ratio estimator (designs.with_ratio)"
        )
    values = np.array(
        [float(bias_corrected(p, f.mean, f.cov, f.theta, f.n, f.index)) for p in phis]
    )
    grads = np.array([np.asarray(p.evaluate(f.mean, f.index)[1], dtype=float) for p in phis])
    V = f.theta / f.n * f.cov if f.n > 1 else np.full(f.cov.shape, np.nan)
    Y = np.repeat(f.Y, np.asarray(np.round(f.multiplicity), dtype=np.int64), axis=0)
    units = np.array(
        [
            float(effective_units(Y[:, [f.index[c] for c in p.columns()]], p, p.columns()))
            for p in phis
        ]
    )
    return values, grads, V, units, f.theta == 0


_TEST_COLUMNS = (
    "prediction",
    "metric",
    "groups",
    "statistic",
    "df",
    "df_denominator",
    "p_value",
    "n_effective",
    "reliable",
    "reason",
    "n_draws",
)


def group_equality_test(
    predictions: Mapping[str, pd.Series] | pd.Series,
    sample: Sample,
    groups: pd.Series,
    metrics: Iterable[str] = _DEFAULT,
    *,
    baseline: str | None = None,
    estimator: str | None = None,
    on_missing: str = "error",
    beta: float = 1.0,
    validate: bool = True,
) -> pd.DataFrame:
    """Test of equality of a metric across groups (module docstring), from the joint
    covariance of the groups' estimates on one sample; the links across groups are not a
    group and are left out.

    Without ``baseline``: for every prediction and metric, H0 "the metric is the same in
    every group". With ``baseline`` (a prediction name): for every other prediction, H0
    "the paired difference other - baseline is the same in every group" (the change
    affects every group alike). Groups whose estimate is undefined (no link in the
    sample) are left out.

    The statistic is Wald's ``W = d' (C Σ C')^+ d`` (:func:`equality_statistic`) on ``df``
    degrees of freedom; its p-value is Hotelling's F, ``W (ν - df + 1)/(df ν) ~ F(df,
    ν - df + 1)`` with ``ν`` the fewest effective units of a tested group minus one
    (:func:`effective_units`: the covariance is known only as well as the group that the
    fewest units carry, as the default interval's Student t counts them). NaN when
    ``ν - df + 1 <= 0``. A census gives ``W = inf``, p = 0 where the groups differ (p = 1
    where they do not).

    Returns one row per test: ``prediction``, ``metric``, ``groups`` (groups tested),
    ``statistic``, ``df``, ``df_denominator`` (``ν - df + 1``), ``p_value``,
    ``n_effective`` (of the group with the fewest), ``reliable`` and ``reason`` (not
    reliable below :data:`~er_evaluation.estimators.diagnostics.MIN_EFFECTIVE_UNITS`
    effective units in a group), ``n_draws``. Size and power: benchmarks/README.md
    ("Blocking, subgroups and the truth's statistics").
    """
    named = _named(predictions)
    metrics = check_metric_names(metrics, GROUP_METRICS, what="per-group metric")
    _check_estimator(estimator)
    if baseline is not None and baseline not in named:
        raise ValueError(f"baseline {baseline!r} is not one of the predictions {list(named)}")
    beta = check_beta(beta)
    on_missing, validate = _check_population_options(on_missing, validate)
    groups = _Groups.of(groups)
    tables = {
        k: group_unit_tables(p, sample, groups, on_missing=on_missing, validate=validate)
        for k, p in named.items()
    }
    rows = []
    for name in named:
        if name == baseline:
            continue
        for metric in metrics:
            parts = []
            tested = [label for label in tables[name] if label != ACROSS]
            for i, label in enumerate(tested):
                phi, cols = _group_function(tables[name][label], metric, estimator, beta)
                if baseline is not None:
                    phi_b, cols_b = _group_function(
                        tables[baseline][label], metric, estimator, beta
                    )
                    phi = Linear([1.0, -1.0], [phi.rename("a:"), phi_b.rename("b:")])
                    cols = {
                        **{"a:" + k: v for k, v in cols.items()},
                        **{"b:" + k: v for k, v in cols_b.items()},
                    }
                parts.append((phi.rename(f"g{i}:"), {f"g{i}:{k}": v for k, v in cols.items()}))
            values, grads, V, units, census = _joint(parts, tables[name][ACROSS])
            defined = np.isfinite(values) & np.isfinite(grads).all(axis=1)
            labels = [g for g, ok in zip(tested, defined, strict=True) if ok]
            statistic, df, p, nu = np.nan, 0, np.nan, np.nan
            if len(labels) >= 2:
                statistic, df = (
                    float(x) for x in equality_statistic(values[defined], grads[defined], V)
                )
                nu = np.inf if census else float(units[defined].min()) - 1.0
                p = float(equality_p_value(statistic, df, nu))
            fewest = labels[int(np.argmin(units[defined]))] if labels else None
            reason = ""
            if len(labels) < 2:
                reason = "fewer than two groups have a defined estimate"
            elif not census and units[defined].min() < MIN_EFFECTIVE_UNITS:
                reason = (
                    f"group {fewest!r} rests on {units[defined].min():.1f} effective units: "
                    f"too few for the test's level (review more of its records)"
                )
            label = result_label(metric, beta)
            rows.append(
                {
                    "prediction": name if baseline is None else f"{name} - {baseline}",
                    "metric": label if baseline is None else f"{label} difference",
                    "groups": len(labels),
                    "statistic": float(statistic),
                    "df": int(df),
                    "df_denominator": float(nu - df + 1) if np.isfinite(nu) else np.inf,
                    "p_value": p,
                    "n_effective": float(units[defined].min()) if labels else np.nan,
                    "reliable": not reason,
                    "reason": reason,
                    "n_draws": sample.n_draws,
                }
            )
    return pd.DataFrame(rows, columns=list(_TEST_COLUMNS))


def _group_function(ut: UnitTable, metric: str, estimator: str | None, beta: float):
    _, phi, cols = metric_function(ut, metric, estimator, beta)
    return phi, cols


def group_metrics(prediction: pd.Series, truth: pd.Series, groups: pd.Series) -> pd.DataFrame:
    """Exact pairwise precision, recall and F1 of ``prediction`` against the full
    ``truth`` (same records) in every group and across groups (module docstring), with
    the link counts: one row per group (index ``group``, sorted, then :data:`ACROSS`),
    columns ``pairwise_precision``, ``pairwise_recall``, ``pairwise_f1``,
    ``true_positive_links``, ``predicted_links``, ``true_links``. NaN where a
    denominator is zero."""
    table = contingency(prediction, truth, scope="shared")
    truth = truth.reindex(prediction.index)
    coded = _Groups.of(groups)
    g, labels = coded.of_records(prediction.index), coded.labels
    G = len(labels)
    pred_code, _ = pd.factorize(prediction.array)
    ref_code, _ = pd.factorize(truth.array)
    cells = {
        "true_positive_links": combine_codes(combine_codes(pred_code, ref_code), g),
        "predicted_links": combine_codes(pred_code, g),
        "true_links": combine_codes(ref_code, g),
    }
    counts = {}
    for k, cell in cells.items():
        group_of = np.zeros(cell.max() + 1, dtype=np.int64)
        group_of[cell] = g
        counts[k] = np.bincount(group_of, weights=comb2(np.bincount(cell)), minlength=G)
    counts = pd.DataFrame(counts, index=pd.Index(labels, dtype=object, name="group"))
    totals = {
        "true_positive_links": table.true_positive_links,
        "predicted_links": table.predicted_links,
        "true_links": table.true_links,
    }
    counts.loc[ACROSS] = {k: totals[k] - counts[k].sum() for k in totals}
    tp, p, t = (counts[k].to_numpy(dtype=float) for k in totals)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision, recall = tp / p, tp / t
        f1 = 2 * tp / (p + t)
    out = pd.DataFrame(
        {"pairwise_precision": precision, "pairwise_recall": recall, "pairwise_f1": f1},
        index=counts.index,
    )
    return pd.concat([out, counts.astype(np.int64)], axis=1)
