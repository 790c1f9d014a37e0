"""Stratified sampling designs (Cochran 1977, §5; records revealing their true clusters by
Lavallée's generalised weight share, Lavallée 2007) and the change-focused design
(:mod:`er_evaluation.estimators.change`).

A design is built in three steps, each a plain function:

1. **strata**: a label for every record of the population (:func:`record_strata` from any
   record- or cluster-level column or function; :func:`size_strata` for bands of predicted
   cluster size with a *take-all* stratum for the largest predicted clusters;
   :func:`change_strata` for "changed between versions A and B"), or for every cluster
   (:func:`cluster_strata`) when whole clusters are drawn;
2. **allocation** of the draws to strata (:func:`allocate`: proportional, Neyman from
   per-stratum standard deviations — from a pilot sample, an existing benchmark or
   assumed error rates, see :mod:`er_evaluation.planning` — or fixed per stratum);
3. **draws** within each stratum by simple random sampling without replacement
   (:func:`draw_stratified`), then, once the drawn records' true clusters are reviewed,
   the :class:`~er_evaluation.sampling.Sample` (:func:`stratified_sample`), which carries
   its :class:`~er_evaluation.strata.Strata` so that
   ``estimate(prediction, sample, metric)`` needs no other design argument.

:func:`sample_stratified` and :func:`sample_stratified_clusters` do steps 2-3 at once
against a known truth (simulations). Strata, frames and draws are validated: a record
without a stratum, a drawn record whose true cluster was not reviewed, or a stratum
without draws is an error naming the offending ids.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Literal

import numpy as np
import pandas as pd

from er_evaluation._parameters import (
    check_choice,
    check_count,
    check_counts,
    check_flag,
    check_labels,
    check_names,
    check_seed,
    check_values,
)
from er_evaluation.clustering import validate_membership
from er_evaluation.errors import examples
from er_evaluation.sampling import Sample
from er_evaluation.strata import FRAMES, RATIOS, Strata

__all__ = [
    "TAKE_ALL",
    "ALLOCATIONS",
    "SIZE_BANDS",
    "record_strata",
    "cluster_strata",
    "size_strata",
    "changed_records",
    "change_strata",
    "allocate",
    "draw_stratified",
    "stratified_sample",
    "sample_stratified",
    "sample_stratified_clusters",
    "sample_changed",
    "unit_totals",
    "with_ratio",
]

TAKE_ALL = "take-all"
"""Label of the take-all stratum made by :func:`size_strata`."""

SIZE_BANDS = (2, 5, 20, 100, 500)
"""Default lower bounds of the predicted-size bands of :func:`size_strata` (1, 2-4, 5-19,
20-99, 100-499, 500+): the one default of the app's stratified draws and of the planner
(``er-eval plan`` and the app's Sample page, through
:func:`~er_evaluation.planning.plan_review`)."""

Allocation = Literal["proportional", "neyman"]
#: the allocations of :func:`allocate`
ALLOCATIONS = ("proportional", "neyman")


def record_strata(
    prediction: pd.Series,
    by: pd.Series | Callable[[pd.Series], pd.Series],
    *,
    level: Literal["record", "cluster"] | None = None,
) -> pd.Series:
    """Stratum label of every record of ``prediction`` (the population).

    ``by`` is a Series indexed by record id (record level: data source, block, ...) or by
    predicted cluster id (cluster level: mapped to each record through its predicted
    cluster), or a function of the prediction returning such a Series. ``level`` says
    which when the ids are ambiguous (default: record level if ``by`` covers every record,
    else cluster level). Every record must get a non-missing label; otherwise a ValueError
    names the records or clusters without one.
    """
    prediction = validate_membership(prediction, name="prediction")
    if callable(by):
        by = by(prediction)
    if not isinstance(by, pd.Series):
        raise TypeError("by must be a pandas Series or a function returning one")
    if by.index.has_duplicates:
        raise ValueError(
            f"duplicated ids in the strata column: {examples(by.index[by.index.duplicated()])}"
        )
    if level is None:
        level = "record" if prediction.index.isin(by.index).all() else "cluster"
    if level == "record":
        labels = by.reindex(prediction.index)
        what, ids = "record", prediction.index
    elif level == "cluster":
        labels = pd.Series(by.reindex(prediction.to_numpy()).to_numpy(), index=prediction.index)
        what, ids = "predicted cluster", pd.Index(prediction.to_numpy())
    else:
        raise ValueError(f"level must be 'record', 'cluster' or None, got {level!r}")
    missing = labels.isna().to_numpy()
    if missing.any():
        bad = pd.unique(ids[missing])
        raise ValueError(f"{len(bad)} {what}(s) have no stratum: {examples(bad)}")
    return check_labels(labels.rename("stratum"), "strata")


def cluster_strata(
    clustering: pd.Series, by: pd.Series | Callable[[pd.Series], pd.Series]
) -> pd.Series:
    """Stratum label of every cluster of ``clustering`` (index: cluster id), for designs
    drawing whole clusters. ``by``: a Series indexed by cluster id, or a function of the
    clustering returning one. Clusters without a label are an error naming them."""
    clustering = validate_membership(clustering)
    if callable(by):
        by = by(clustering)
    if not isinstance(by, pd.Series):
        raise TypeError("by must be a pandas Series or a function returning one")
    if by.index.has_duplicates:
        raise ValueError(
            f"duplicated ids in the strata column: {examples(by.index[by.index.duplicated()])}"
        )
    clusters = pd.Index(pd.unique(clustering.to_numpy()))
    labels = by.reindex(clusters)
    missing = labels.isna().to_numpy()
    if missing.any():
        raise ValueError(
            f"{int(missing.sum())} cluster(s) have no stratum: {examples(clusters[missing])}"
        )
    return check_labels(labels.rename("stratum"), "strata", what="cluster")


def check_bands(bands) -> list[int]:
    """Lower bounds of size bands: a list of whole numbers >= 2 (the band of singletons,
    1, is always there), else a ValueError naming the value."""
    if isinstance(bands, (str, bytes)) or not isinstance(bands, Iterable):
        raise ValueError(f"bands must be a list of cluster sizes >= 2, got {bands!r}")
    return [check_count(b, "bands", minimum=2) for b in bands]


def _band_labels(sizes: np.ndarray, bands: list[int]) -> np.ndarray:
    edges = np.unique(np.asarray([1, *bands], dtype=np.int64))
    hi = np.append(edges[1:] - 1, -1)
    names = np.array(
        [
            f"{a}+" if b < 0 else (f"{a}" if a == b else f"{a}-{b}")
            for a, b in zip(edges, hi, strict=True)
        ],
        dtype=object,
    )
    return names[np.searchsorted(edges, sizes, side="right") - 1]


def size_strata(
    prediction: pd.Series,
    bands: Iterable[int] = SIZE_BANDS,
    *,
    take_all_size: int | None = None,
) -> pd.Series:
    """Stratum of every record by the size of its predicted cluster.

    ``bands`` are the lower bounds of the size bands above 1 (default :data:`SIZE_BANDS`:
    1, 2-4, 5-19, 20-99, 100-499, 500+). Records of predicted clusters with at least ``take_all_size`` records form
    the :data:`TAKE_ALL` stratum, meant to be reviewed entirely (pass
    ``take_all=[TAKE_ALL]`` to :func:`allocate`): with heavy-tailed cluster sizes these few
    clusters carry most predicted links and most errors.

    As strata of *records* (each drawn record's true cluster reviewed), these bands do not
    help precision: on a heavy-tailed truth (Zipf(2), 200,000 records, 5% and 10%
    misattribution, 400 replicates) the precision interval covered 74.5% and 71.8% and
    the RMSE was 2.1-2.2 times the uniform record design's (``benchmarks/README.md``,
    "Stratified designs"), because a record's value is driven by its true cluster, which
    predicted-size strata do not isolate. For precision, stratify *predicted clusters*
    and review them whole (:func:`sample_stratified_clusters`, or the recommended design
    of :func:`er_evaluation.recommend.recommend_design`).
    """
    prediction = validate_membership(prediction, name="prediction")
    bands = check_bands(bands)
    if take_all_size is not None:
        take_all_size = check_count(take_all_size, "take_all_size")
    codes, _ = pd.factorize(prediction.to_numpy())
    size = np.bincount(codes)[codes]
    labels = _band_labels(size, bands)
    if take_all_size is not None:
        labels = np.where(size >= take_all_size, TAKE_ALL, labels)
    return pd.Series(labels, index=prediction.index, name="stratum")


def changed_records(a: pd.Series, b: pd.Series) -> pd.Series:
    """Whether each record's predicted cluster differs, as a set of records, between
    versions ``a`` and ``b``. Both must cover the same records (a ValueError
    names records in one only). Vectorised: a record is unchanged iff its cell of the
    a-by-b contingency holds its whole a-cluster and its whole b-cluster."""
    a = validate_membership(a, name="version A")
    b = validate_membership(b, name="version B")
    only_a, only_b = a.index.difference(b.index), b.index.difference(a.index)
    if len(only_a) or len(only_b):
        raise ValueError(
            f"versions A and B must cover the same records; {len(only_a)} only in A "
            f"({examples(only_a)}), {len(only_b)} only in B ({examples(only_b)})"
        )
    b = b.reindex(a.index)
    ca, _ = pd.factorize(a.to_numpy())
    cb, _ = pd.factorize(b.to_numpy())
    size_a, size_b = np.bincount(ca), np.bincount(cb)
    cell, _ = pd.factorize(ca.astype(np.int64) * (cb.max() + 1) + cb)
    n_cell = np.bincount(cell)[cell]
    unchanged = (n_cell == size_a[ca]) & (n_cell == size_b[cb])
    return pd.Series(~unchanged, index=a.index, name="changed")


def change_strata(a: pd.Series, b: pd.Series) -> pd.Series:
    """Stratum "changed" or "unchanged" of every record (see :func:`changed_records`)."""
    changed = changed_records(a, b)
    return pd.Series(np.where(changed, "changed", "unchanged"), index=changed.index, name="stratum")


def _round_to(total: int, target: np.ndarray) -> np.ndarray:
    """Integers summing to ``total`` closest to ``target`` (largest remainders): each is
    the floor or the ceiling of its target, so integer bounds on the targets hold."""
    base = np.floor(target).astype(np.int64)
    rest = total - int(base.sum())
    if rest > 0:
        order = np.argsort(-(target - base), kind="stable")
        base[order[:rest]] += 1
    return base


def allocate(
    frame_sizes: pd.Series,
    n: int | pd.Series,
    *,
    method: Allocation = "proportional",
    sd: pd.Series | None = None,
    cost: pd.Series | None = None,
    take_all: Iterable = (),
    minimum: int = 2,
) -> pd.Series:
    """Number of draws per stratum for a total of ``n`` draws (take-all strata included).

    ``frame_sizes``: F_h per stratum (e.g. ``strata.value_counts()``), whole numbers >= 1.
    ``take_all`` strata (a list of stratum names) get n_h = F_h. The rest is shared
    ``method="proportional"`` (n_h ∝ F_h) or ``"neyman"`` (n_h ∝ F_h S_h with ``sd`` =
    S_h >= 0, the standard deviation of the estimator's per-draw linearised value in
    stratum h: Neyman 1934); with ``cost`` (c_h > 0: e.g. records read per draw)
    n_h ∝ F_h S_h / sqrt(c_h) (Cochran 1977, §5.5). Every other stratum gets between
    ``min(minimum, F_h)`` draws (two are needed for a variance) and F_h: the shares are
    n_h = clip(λ F_h S_h, min(minimum, F_h), F_h) with λ such that they sum to ``n``
    (the allocation of least variance Σ F_h² S_h² / n_h under these bounds; a stratum
    whose share reaches F_h is reviewed entirely), then rounded to integers summing to
    ``n``. ``n`` may instead be a Series of fixed draws per stratum: whole numbers >= 0
    for every stratum of the frame, at most F_h (``take_all`` strata get F_h whatever
    ``n`` gives them).

    A total that no allocation meets is an error saying why: more draws than frame units,
    or fewer than the take-all strata and the least draws per stratum need (with the
    smallest feasible ``n``).
    """
    frame_sizes, n, method, sd, cost, take_all, minimum = _check_allocation(
        frame_sizes, n, method, sd, cost, take_all, minimum
    )
    return _allocation(
        frame_sizes, n, method=method, sd=sd, cost=cost, take_all=take_all, minimum=minimum
    )


def _check_allocation(frame_sizes, n, method, sd, cost, take_all, minimum) -> tuple:
    """The arguments of :func:`allocate`, checked at a design's door: frame sizes whole
    numbers >= 1, a total of draws >= 1 or fixed draws >= 0 over known strata, standard
    deviations finite and >= 0, costs finite and > 0, take-all strata that exist."""
    F = check_counts(frame_sizes, "frame_sizes", minimum=1)
    if isinstance(n, pd.Series):
        n = check_counts(n, "n", F.index)
    else:
        n = check_count(n, "n")
    method = check_choice(method, "method", ALLOCATIONS)
    if sd is not None:
        sd = check_values(sd, "sd", F.index)
    if cost is not None:
        cost = check_values(cost, "cost", F.index, positive=True)
    take_all = check_names(take_all, "take_all", F.index)
    return F, n, method, sd, cost, take_all, check_count(minimum, "minimum")


def _fixed_allocation(F: pd.Series, n: pd.Series, take_all: list) -> pd.Series:
    out = n.reindex(F.index)
    if out.isna().any():
        raise ValueError(
            f"fixed allocation n is missing strata: {examples(F.index[out.isna().to_numpy()])}"
        )
    out = out.astype(np.int64)
    out[take_all] = F[take_all]
    over = (out > F).to_numpy()
    if over.any():
        h = F.index[over][0]
        raise ValueError(
            f"more draws than frame units in stratum/strata {examples(F.index[over])} "
            f"(n[{h!r}] = {out[h]:,} of {F[h]:,})"
        )
    return out.rename("draws")


def _allocation(
    frame_sizes: pd.Series,
    n: int | pd.Series,
    *,
    method: Allocation,
    sd: pd.Series | None,
    cost: pd.Series | None,
    take_all: list,
    minimum: int,
) -> pd.Series:
    """:func:`allocate` of checked arguments."""
    F = frame_sizes
    if isinstance(n, pd.Series):
        return _fixed_allocation(F, n, take_all)
    Fv = F.to_numpy(dtype=np.int64)
    full = F.index.isin(take_all)
    total = int(Fv.sum())
    if n > total:
        raise ValueError(
            f"n={n:,} draws exceed the {total:,} frame units of the {len(F)} strata: a "
            f"design without replacement draws at most {total:,}"
        )
    floor = np.where(full, Fv, np.minimum(minimum, Fv))
    if n < int(floor.sum()):
        raise ValueError(_infeasible(F, n, full, floor, minimum))
    if method == "neyman":
        if sd is None:
            raise ValueError("Neyman allocation needs per-stratum standard deviations (sd=)")
        s = sd.reindex(F.index)
        if s.isna().any():
            raise ValueError(f"sd is missing for strata {examples(F.index[s.isna().to_numpy()])}")
        score = Fv * s.to_numpy(dtype=float)
    else:
        score = Fv.astype(float)
    if cost is not None:
        c = cost.reindex(F.index)
        if c.isna().any():
            raise ValueError(f"cost is missing for strata {examples(F.index[c.isna().to_numpy()])}")
        score = score / np.sqrt(c.to_numpy(dtype=float))
    free = ~full
    out = Fv.copy()
    if free.any():
        if not (score[free] > 0).any():  # no spread anywhere: proportional
            score = Fv.astype(float)
        budget = n - int(Fv[full].sum())
        shares = _clipped_shares(score[free], floor[free].astype(float), Fv[free], budget)
        out[free] = _round_to(budget, shares)
    return pd.Series(out, index=F.index, name="draws")


def _infeasible(F: pd.Series, n: int, full: np.ndarray, floor: np.ndarray, minimum: int) -> str:
    """Why ``n`` draws cannot be allocated, with the smallest total that can."""
    need = int(floor.sum())
    others = int((~full).sum())
    parts = []
    if full.any():
        parts.append(
            f"cover the take-all strata {examples(F.index[full])} ({int(floor[full].sum()):,} "
            "frame units, all reviewed)"
        )
    if others:
        parts.append(
            f"give at least {minimum} draws to each of the {'other ' if full.any() else ''}"
            f"{others} {'stratum' if others == 1 else 'strata'} ({int(floor[~full].sum()):,} draws)"
        )
    remedy = "fewer take-all strata" if full.any() else "fewer strata, or minimum=1"
    return f"n={n:,} draws cannot {' and '.join(parts)}: give n >= {need:,}, or {remedy}"


def _clipped_shares(w: np.ndarray, lo: np.ndarray, hi: np.ndarray, budget: int) -> np.ndarray:
    """x_h = clip(λ w_h, lo_h, hi_h) with Σ x_h = ``budget`` (lo.sum() <= budget <=
    hi.sum()): the allocation of least Σ w_h² / x_h within the bounds (its optimality
    conditions give x_h ∝ w_h wherever a bound does not hold). λ by bisection; what the
    draws still lack (the bisection's last rounding, or the draws left once every stratum
    with w_h > 0 is complete) goes to the strata below their upper bound, in proportion
    to their room: strata with w_h = 0 add nothing to the variance wherever they get it."""
    if budget >= hi.sum():
        return hi.astype(float)
    positive = w > 0
    top = float(np.max(hi[positive] / w[positive]))
    low, high = 0.0, top
    for _ in range(200):
        mid = (low + high) / 2
        if np.clip(mid * w, lo, hi).sum() <= budget:
            low = mid
        else:
            high = mid
        if high - low <= top * 1e-15:
            break
    x = np.clip(low * w, lo, hi)
    room = hi - x
    gap = budget - x.sum()
    if gap > 0:
        x = x + gap * room / room.sum()
    return x


def draw_stratified(
    strata: pd.Series, allocation: pd.Series, *, replace: bool = False, seed=None
) -> pd.Series:
    """Draw ``allocation[h]`` frame units (index entries of ``strata``: record or cluster
    ids) uniformly in every stratum h, without replacement by default. ``allocation``:
    whole numbers >= 0 for every stratum of ``strata`` (:func:`allocate`); a stratum that
    ``strata`` does not hold is an error. Returns the drawn ids (index; repeated when drawn
    with replacement) with their stratum (values)."""
    replace, seed = check_flag(replace, "replace"), check_seed(seed, generator=True)
    strata = check_labels(strata, "strata", what="unit")
    allocation = check_counts(allocation, "allocation", pd.Index(pd.unique(strata.to_numpy())))
    return _draw_within(strata, allocation, replace=replace, seed=seed)


def _draw_within(strata: pd.Series, allocation: pd.Series, *, replace: bool, seed) -> pd.Series:
    """:func:`draw_stratified` of checked arguments."""
    rng = np.random.default_rng(seed)
    codes, names = pd.factorize(strata.to_numpy())
    alloc = allocation.reindex(names)
    if alloc.isna().any():
        raise ValueError(f"no allocation for strata {examples(names[alloc.isna().to_numpy()])}")
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(len(names)))
    sizes = np.bincount(codes, minlength=len(names))
    picks = []
    for h in range(len(names)):  # one vectorised draw per stratum (few strata)
        k = int(alloc.iloc[h])
        if not replace and k > sizes[h]:
            raise ValueError(
                f"cannot draw {k} of {sizes[h]} units of stratum {names[h]!r} without replacement"
            )
        if k == sizes[h] and not replace:
            pos = np.arange(sizes[h])
        else:
            pos = rng.choice(sizes[h], size=k, replace=replace)
        picks.append(order[starts[h] + pos])
    rows = np.concatenate(picks) if picks else np.array([], dtype=np.int64)
    return pd.Series(strata.to_numpy()[rows], index=strata.index[rows], name="stratum")


def stratified_sample(
    reference: pd.Series,
    drawn: pd.Series,
    frame_sizes: pd.Series,
    *,
    replace: bool = False,
    frame: Literal["records", "clusters"] = "records",
    unit_totals: pd.DataFrame | None = None,
) -> Sample:
    """The :class:`~er_evaluation.sampling.Sample` of a stratified design, once reviewed.

    ``drawn``: the drawn frame units (index: record ids for ``frame="records"``, cluster
    ids for ``frame="clusters"``; repeated when drawn with replacement) with their stratum
    (values), as returned by :func:`draw_stratified`. ``frame_sizes``: F_h for every
    stratum of the frame (including strata where nothing was drawn, which is an error: their
    part of the population could not be estimated). ``reference``: the reviewed true
    cluster of every record of the reached clusters (records frame: the whole true cluster
    of every drawn record; clusters frame: every record of the drawn clusters, labelled by
    the drawn cluster id — call :meth:`Sample.reviewed_predicted` with the reviewed truth
    when the drawn clusters are predicted clusters).

    Records frame: a draw of record i in stratum h reveals its true cluster c(i), whose
    totals are shared among its |c| records (the generalised weight share, Lavallée 2007):
    the sample's per-unit ``probability`` is |c| and the draws' expansion weight F_h / n_h.

    ``unit_totals`` (clusters frame, optional; :func:`unit_totals`): per stratum, the
    records and within-unit pairs of all its frame units, which the separate ratio
    estimator needs (:func:`with_ratio`).
    """
    replace = check_flag(replace, "replace")
    frame = check_choice(frame, "frame", FRAMES)
    return _stratified_sample(
        reference, drawn, frame_sizes, replace=replace, frame=frame, unit_totals=unit_totals
    )


def _stratified_sample(
    reference: pd.Series,
    drawn: pd.Series,
    frame_sizes: pd.Series,
    *,
    replace: bool,
    frame: str = "records",
    unit_totals: pd.DataFrame | None = None,
) -> Sample:
    """:func:`stratified_sample` of checked arguments."""
    reference = validate_membership(reference, name="reference")
    names = pd.Index(frame_sizes.index)
    code = names.get_indexer(drawn.to_numpy())
    if (code < 0).any():
        raise ValueError(
            f"drawn units in unknown strata: {examples(pd.unique(drawn.to_numpy()[code < 0]))}"
        )
    if frame == "records":
        pos = reference.index.get_indexer(drawn.index)
        if (pos < 0).any():
            bad = drawn.index[pos < 0]
            raise ValueError(
                f"{len(bad)} drawn record(s) have no reviewed true cluster: {examples(bad)}"
            )
        unit_of_draw = reference.to_numpy()[pos]
    else:
        unit_of_draw = drawn.index.to_numpy()
    ucode, units = pd.factorize(unit_of_draw)
    units = pd.Index(units)
    key, groups = pd.factorize(ucode.astype(np.int64) * len(names) + code)
    count = np.bincount(key)
    groups = np.asarray(groups, dtype=np.int64)
    row_unit, row_stratum = groups // len(names), groups % len(names)
    n_h = np.bincount(row_stratum, weights=count, minlength=len(names)).astype(np.int64)
    totals = {}
    if unit_totals is not None:
        if frame != "clusters":
            raise ValueError("unit_totals describe the units of a clusters frame")
        t = unit_totals.reindex(names)
        if t[["records", "pairs"]].isna().to_numpy().any():
            bad = names[t[["records", "pairs"]].isna().any(axis=1).to_numpy()]
            raise ValueError(f"unit_totals is missing strata: {examples(bad)}")
        totals = {"unit_records": t["records"].to_numpy(), "unit_pairs": t["pairs"].to_numpy()}
    strata = Strata(
        names=names,
        frame_size=frame_sizes.to_numpy(dtype=np.int64),
        n_draws=n_h,
        replace=replace,
        frame=frame,
        row_unit=row_unit,
        row_stratum=row_stratum,
        row_count=count,
        **totals,
    )
    multiplicity = np.bincount(row_unit, weights=count, minlength=len(units)).astype(np.int64)
    if frame == "records":
        reference = reference[reference.isin(units)]
        probability = reference.value_counts(sort=False).reindex(units).to_numpy(dtype=float)
        weights = "cluster_size"
    else:
        missing = units.difference(pd.Index(pd.unique(reference.to_numpy())))
        if len(missing):
            raise ValueError(
                f"{len(missing)} drawn cluster(s) have no reviewed record: {examples(missing)}"
            )
        reference = reference[reference.isin(units)]
        probability = np.ones(len(units))
        weights = "uniform"
    return Sample(
        reference=reference,
        units=units,
        multiplicity=multiplicity,
        probability=probability,
        design=f"stratified {frame}",
        weights=weights,
        replace=replace,
        population_size=int(strata.frame_size.sum()),
        strata=strata,
    )


def _allocate_and_draw(
    units: pd.Index,
    unit_name: str,
    strata: pd.Series,
    n: int | pd.Series,
    method: Allocation,
    sd: pd.Series | None,
    take_all: Iterable,
    replace: bool,
    seed,
) -> tuple[pd.Series, pd.Series, pd.Series]:
    """The steps :func:`sample_stratified`, :func:`sample_stratified_clusters` and
    :func:`sample_changed` share: give every frame unit (``units``: records or clusters)
    its stratum, count the frame sizes F_h, check and allocate ``n`` draws
    (:func:`allocate`) and draw within strata (:func:`draw_stratified`). Returns the
    frame's strata, F_h and the drawn units."""
    strata = check_labels(strata, "strata", what=unit_name)
    missing = units.difference(strata.index)
    if len(missing):
        raise ValueError(f"{len(missing)} {unit_name}(s) have no stratum: {examples(missing)}")
    strata = strata.reindex(units)
    F = strata.value_counts(sort=False)
    F, n, method, sd, _, take_all, _ = _check_allocation(F, n, method, sd, None, take_all, 2)
    alloc = _allocation(F, n, method=method, sd=sd, cost=None, take_all=take_all, minimum=2)
    return strata, F, _draw_within(strata, alloc, replace=replace, seed=seed)


def sample_stratified(
    truth: pd.Series,
    strata: pd.Series,
    n: int | pd.Series,
    *,
    method: Allocation = "proportional",
    sd: pd.Series | None = None,
    take_all: Iterable = (),
    replace: bool = False,
    seed=None,
) -> Sample:
    """Stratified record sample against a known ``truth`` (simulations): allocate ``n``
    draws (:func:`allocate`), draw records within strata (:func:`draw_stratified`) and
    review their true clusters (:func:`stratified_sample`). ``strata``: stratum of every
    record of ``truth`` (e.g. :func:`size_strata` of the prediction)."""
    replace, seed = check_flag(replace, "replace"), check_seed(seed, generator=True)
    truth = validate_membership(truth, name="truth")
    _, F, drawn = _allocate_and_draw(
        truth.index, "record", strata, n, method, sd, take_all, replace, seed
    )
    return _stratified_sample(truth, drawn, F, replace=replace)


def sample_stratified_clusters(
    clustering: pd.Series,
    strata: pd.Series,
    n: int | pd.Series,
    *,
    method: Allocation = "proportional",
    sd: pd.Series | None = None,
    take_all: Iterable = (),
    replace: bool = False,
    seed=None,
) -> Sample:
    """Stratified sample of whole clusters of ``clustering`` (``strata``: stratum of every
    cluster id, e.g. from :func:`cluster_strata`). Drawing predicted clusters this way and
    reviewing them gives a sample of predicted clusters (call
    :meth:`~er_evaluation.sampling.Sample.reviewed_predicted` with the reviewed truth),
    which estimates precision-type metrics by duality."""
    replace, seed = check_flag(replace, "replace"), check_seed(seed, generator=True)
    clustering = validate_membership(clustering)
    clusters = pd.Index(pd.unique(clustering.to_numpy()))
    strata, F, drawn = _allocate_and_draw(
        clusters, "cluster", strata, n, method, sd, take_all, replace, seed
    )
    return _stratified_sample(
        clustering,
        drawn,
        F,
        replace=replace,
        frame="clusters",
        unit_totals=unit_totals(strata, clustering),
    )


def unit_totals(strata: pd.Series, clustering: pd.Series) -> pd.DataFrame:
    """Per stratum of a clusters frame (``strata``: the stratum of every cluster id of
    ``clustering``), the records Σ|u| and within-unit pairs Σ C(|u|,2) of its clusters:
    the strata's totals of the ratio denominators "size" and "pairs", known from the
    frame, that the separate ratio estimator needs (:func:`with_ratio`)."""
    sizes = clustering.value_counts(sort=False)
    missing = sizes.index.difference(strata.index)
    if len(missing):
        raise ValueError(f"{len(missing)} cluster(s) have no stratum: {examples(missing)}")
    s = sizes.to_numpy(dtype=float)
    frame = pd.DataFrame({"records": s, "pairs": s * (s - 1) / 2})
    return frame.groupby(strata.reindex(sizes.index).to_numpy(), sort=False).sum()


def with_ratio(sample: Sample, ratio: Literal["combined", "separate"]) -> Sample:
    """The stratified ``sample`` with its ratio estimator chosen: "combined" (default: one
    ratio of the stratified totals) or "separate" (one ratio per stratum, weighted by the
    stratum's known share of the denominator; Cochran 1977, §6.10). Every estimate from
    the returned sample (:func:`~er_evaluation.estimators.estimate`, ``compare``, ...)
    uses it; see :mod:`er_evaluation.estimators.stratified` for the formulas and for which
    samples know the strata's denominator totals."""
    ratio = check_choice(ratio, "ratio", RATIOS)
    if sample.strata is None:
        raise ValueError("the ratio estimator is a choice for stratified samples only")

    design = sample.design.removesuffix(", separate ratio")
    if ratio == "separate":
        design += ", separate ratio"
    return dataclasses.replace(
        sample, strata=dataclasses.replace(sample.strata, ratio=ratio), design=design
    )


def sample_changed(
    truth: pd.Series,
    a: pd.Series,
    b: pd.Series,
    n: int | pd.Series,
    *,
    strata: pd.Series | None = None,
    method: Allocation = "proportional",
    sd: pd.Series | None = None,
    take_all: Iterable = (),
    seed=None,
) -> Sample:
    """Change-focused design (:mod:`er_evaluation.estimators.change`) against a known
    ``truth`` (simulations): draw ``n`` of the records whose predicted cluster differs
    between versions ``a`` and ``b`` (:func:`changed_records`), without replacement,
    stratified by ``strata`` (labels of the records, e.g. :func:`size_strata` of ``a``;
    default one stratum "changed"), and review their true clusters. The frame is the changed records only: estimate the
    paired difference with :func:`~er_evaluation.estimators.change.compare_changed`."""
    seed = check_seed(seed, generator=True)
    truth = validate_membership(truth, name="truth")
    changed = changed_records(a, b)
    ids = changed.index[changed.to_numpy()]
    if len(ids) == 0:
        raise ValueError("versions A and B agree on every record: nothing changed to sample")
    if strata is None:
        strata = pd.Series("changed", index=ids, name="stratum")
    _, F, drawn = _allocate_and_draw(
        ids, "changed record", strata, n, method, sd, take_all, False, seed
    )
    return _stratified_sample(truth, drawn, F, replace=False)
