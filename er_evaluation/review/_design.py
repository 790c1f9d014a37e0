"""The review design: which records are reviewed, by whom, and the design-based sample that
the finished reviews form.

The queue has one row per record to review: ``record_id``, the sampled ``unit`` it belongs
to (itself for a record design, its predicted cluster or its block otherwise),
``reviewer`` (None for a shared queue) and ``second_reviewer`` (the independent second
reviewer of double-reviewed units, else None).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from er_evaluation.designs import (
    TAKE_ALL,
    allocate,
    changed_records,
    draw_stratified,
    size_strata,
    stratified_sample,
)
from er_evaluation.errors import examples, plain_id
from er_evaluation.recommend import DesignDraw, DesignSample, RecommendedDesign
from er_evaluation.review._checks import check_reviewer
from er_evaluation.review._model import ReviewError
from er_evaluation.sampling import Sample, benchmark_sample, sample_clusters

#: Sampling designs of the review queue and how the app describes them.
DESIGNS = {
    "records": "records uniformly (their clusters by size)",
    "clusters": "predicted clusters uniformly",
    "blocks": "blocks uniformly",
    "stratified": "records stratified by predicted cluster size (largest clusters taken entirely)",
    "change": "records that changed between two versions (to compare them)",
    "recommended": "the recommended design: the largest predicted clusters whole, more by "
    "size band, records for recall (size: records to read)",
}
#: the designs drawing records within strata (:mod:`er_evaluation.designs`)
STRATIFIED_DESIGNS = ("stratified", "change")
QUEUE_COLUMNS = ("record_id", "unit", "reviewer", "second_reviewer")


def assign_reviewers(
    sampled_records: Iterable, reviewers: Sequence[str], *, seed: int
) -> pd.Series:
    """Split a sample among reviewers: a seeded random permutation dealt round-robin, so
    each reviewer gets ``n // k`` or ``n // k + 1`` records and the split is the same for
    the same seed. Returns a Series sampled record -> reviewer in the sample's order."""
    records = pd.Index([plain_id(r) for r in sampled_records])
    if len(records) == 0:
        raise ReviewError("no sampled records to assign")
    if records.has_duplicates:
        raise ReviewError(
            f"sampled records repeat: {examples(records[records.duplicated()].unique())}"
        )
    reviewers = _check_reviewers(reviewers)
    order = np.random.default_rng(seed).permutation(len(records))
    who = np.empty(len(records), dtype=object)
    who[order] = np.array(reviewers, dtype=object)[np.arange(len(records)) % len(reviewers)]
    return pd.Series(who, index=records, name="reviewer")


def _check_reviewers(reviewers: Sequence[str]) -> list[str]:
    reviewers = list(reviewers)
    if not reviewers:
        raise ReviewError("no reviewers given")
    reviewers = [check_reviewer(name) for name in reviewers]
    if len(set(reviewers)) != len(reviewers):
        raise ReviewError(f"reviewer names repeat: {reviewers}")
    return reviewers


def assign_second_reviewers(
    first: pd.Series, reviewers: Sequence[str], share: float, *, seed: int
) -> pd.Series:
    """Second, independent reviewers for a share of the units (double review).

    ``first`` maps unit -> first reviewer (from :func:`assign_reviewers`). A seeded
    ``round(share * n_units)`` of the units, drawn uniformly without replacement, get a
    second reviewer other than their first one: the other reviewer with the fewest second
    reviews so far (first in ``reviewers`` order on ties), so the extra work is balanced. Returns unit -> second reviewer (None for
    single-reviewed units), in ``first``'s order.
    """
    if not 0.0 <= float(share) <= 1.0:
        raise ReviewError(f"double review share must be between 0 and 1, got {share!r}")
    second = pd.Series([None] * len(first), index=first.index, dtype=object, name="second")
    n_double = int(round(float(share) * len(first)))
    if n_double == 0:
        return second
    reviewers = _check_reviewers(reviewers)
    if len(reviewers) < 2:
        raise ReviewError("double review needs at least two reviewers")
    rng = np.random.default_rng([seed, 2])  # a stream of its own: the split stays as it was
    chosen = rng.choice(len(first), size=n_double, replace=False)
    load = dict.fromkeys(reviewers, 0)
    values = second.to_numpy(copy=True)
    firsts = first.to_numpy()
    for pos in chosen:  # one step per double-reviewed unit, not per record
        name = min((r for r in reviewers if r != firsts[pos]), key=load.__getitem__)
        load[name] += 1
        values[pos] = name
    second[:] = values
    return second


def draw_queue(
    prediction: pd.Series,
    *,
    design: str,
    size: int,
    seed: int,
    blocks: pd.Series | None = None,
    reviewers: Sequence[str] = (),
    double_share: float = 0.0,
    take_all_size: int | None = None,
    other: pd.Series | None = None,
    recommended: RecommendedDesign | None = None,
) -> pd.DataFrame:
    """The records to review (columns :data:`QUEUE_COLUMNS`), drawn from ``prediction``.

    Records are drawn with :func:`~er_evaluation.sampling.sample_clusters` without
    replacement: a record design is a uniform sample of singleton units (each record's
    true cluster is then drawn with probability proportional to its size, Binette et al.
    2023 §3); cluster and block designs list every record of the uniformly drawn
    predicted clusters or blocks (``blocks``: record -> block id). The stratified and
    change designs draw ``size`` records within the strata of :func:`design_strata` (the
    take-all stratum of predicted clusters of at least ``take_all_size`` records is added
    whole; a change design samples only records whose predicted cluster differs in
    ``other``), with a ``stratum`` column. The recommended design draws ``recommended``
    (:func:`~er_evaluation.recommend.recommend_design` for a budget of ``size`` records)
    with ``seed``: the records of its drawn predicted clusters (unit ``cluster ID``,
    ``stratum`` the cluster's) and its records drawn for recall (unit ``record ID``,
    ``stratum`` "recall" unless the record is in a drawn cluster), with the record's recall
    ``draws`` and the position of its ``first_draw`` (-1: none). Whole units go to one
    reviewer (:func:`assign_reviewers`); ``double_share`` of them also to a second one
    (:func:`assign_second_reviewers`).
    """
    if design not in DESIGNS:
        raise ReviewError(f"design must be one of {list(DESIGNS)}, got {design!r}")
    if design in STRATIFIED_DESIGNS:
        strata = design_strata(prediction, design, take_all_size=take_all_size, other=other)
        F = strata.value_counts(sort=False)
        take_all = [TAKE_ALL] if TAKE_ALL in F.index else []
        alloc = allocate(F, size + int(F[take_all].sum()), take_all=take_all)
        drawn = draw_stratified(strata, alloc, seed=seed)
        queue = pd.DataFrame(
            {"record_id": drawn.index, "unit": drawn.index, "stratum": drawn.to_numpy()}
        )
    elif design == "recommended":
        if recommended is None:
            raise ReviewError("the recommended design needs its design (recommend_design)")
        queue = _recommended_queue(recommended, recommended.draw(seed=seed))
    elif design == "records":
        ids = prediction.index
        units = sample_clusters(
            pd.Series(ids, index=ids), size, weights="uniform", replace=False, seed=seed
        ).units
        queue = pd.DataFrame({"record_id": units, "unit": units})
    else:
        if design == "clusters":
            grouping = prediction
        else:
            if blocks is None:
                raise ReviewError("the block design needs a block column")
            grouping = blocks.reindex(prediction.index)
        units = sample_clusters(grouping, size, weights="uniform", replace=False, seed=seed).units
        members = grouping[grouping.isin(units)]
        queue = pd.DataFrame({"record_id": members.index, "unit": members.to_numpy()})
    queue["reviewer"] = pd.Series([None] * len(queue), index=queue.index, dtype=object)
    queue["second_reviewer"] = queue["reviewer"].copy()
    if reviewers:
        first = assign_reviewers(queue["unit"].unique(), reviewers, seed=seed)
        second = assign_second_reviewers(first, reviewers, double_share, seed=seed)
        queue["reviewer"] = queue["unit"].map(first).astype(object)
        queue["second_reviewer"] = queue["unit"].map(second).astype(object)
    elif double_share:
        raise ReviewError("double review needs named reviewers")
    return queue


def _recommended_queue(recommended: RecommendedDesign, draw: DesignDraw) -> pd.DataFrame:
    table = recommended.review_table(draw)
    ids = table.index
    in_cluster = (table["part"] != "recall").to_numpy()
    unit = np.where(
        in_cluster,
        "cluster " + table["predicted_cluster"].astype(str).to_numpy(dtype=object),
        "record " + ids.astype(str).to_numpy(dtype=object),
    )
    first = pd.Series(np.arange(len(draw.records)), index=draw.records).groupby(level=0).min()
    return pd.DataFrame(
        {
            "record_id": ids,
            "unit": unit,
            "stratum": table["stratum"].to_numpy(),
            "draws": table["draws"].to_numpy(dtype=np.int64),
            "first_draw": first.reindex(ids, fill_value=-1).to_numpy(dtype=np.int64),
        }
    )


def finished_units(queue: pd.DataFrame, truth: pd.Series) -> int:
    """The queue's units every record of which is in a reviewed true cluster (``truth``):
    the one count of finished units that the samples of :func:`reviewed_sample` and
    :func:`recommended_sample` report and ``review status`` shows, never more than the
    queue's units (a recommended design's record drawn for recall inside a drawn
    predicted cluster is part of that cluster's unit, not a unit of its own)."""
    done = queue["record_id"].isin(truth.index).to_numpy()
    return int(pd.Series(done).groupby(queue["unit"].to_numpy()).all().sum())


def distinct_units_note(finished: int, n_units: int) -> str:
    """What follows a count of ``finished`` queue units when fewer distinct clusters were
    sampled (two records drawn in one true cluster are two draws of one unit): how many
    the estimates' ``n_units`` count, so that neither count is read for the other; empty
    when they are equal."""
    if n_units == finished:
        return ""
    return (
        f" ({n_units:,} distinct sampled cluster{'' if n_units == 1 else 's'}, the estimates' "
        "n_units: a cluster drawn twice counts once)"
    )


def recommended_sample(
    queue: pd.DataFrame, truth: pd.Series, recommended: RecommendedDesign
) -> tuple[DesignSample | None, int]:
    """The reviewed samples of a recommended-design queue's finished units: the drawn
    predicted clusters whose every record is in a reviewed true cluster, and the record
    draws whose record is (``(None, 0)`` before the first finished unit). Each stratum of
    predicted clusters needs a finished cluster, and recall a finished record draw."""
    done = queue["record_id"].isin(truth.index).to_numpy()
    prediction = recommended.prediction
    rows = queue[(queue["stratum"] != "recall").to_numpy()]
    whole = (
        pd.Series(done[(queue["stratum"] != "recall").to_numpy()])
        .groupby(rows["unit"].to_numpy(), sort=False)
        .all()
    )
    finished_rows = rows[rows["unit"].isin(whole.index[whole.to_numpy()]).to_numpy()]
    recall = queue[(queue["draws"] > 0).to_numpy()].sort_values("first_draw", kind="stable")
    records = pd.Index(np.repeat(recall["record_id"].to_numpy(), recall["draws"].to_numpy()))
    all_clusters = prediction.reindex(rows["record_id"]).to_numpy()
    clusters = pd.Series(rows["stratum"].to_numpy(), index=all_clusters)
    clusters = clusters[~clusters.index.duplicated()]
    drawn = recommended.drawn(DesignDraw(clusters=clusters, records=records))
    finished_records = recall["record_id"][recall["record_id"].isin(truth.index).to_numpy()]
    finished_clusters = pd.Index(pd.unique(prediction.reindex(finished_rows["record_id"])))
    if len(finished_clusters) + len(finished_records) == 0:
        return None, 0
    drawn = drawn.subset(finished_clusters, pd.Index(finished_records))
    waiting = drawn.frame_sizes.index.difference(pd.Index(pd.unique(drawn.clusters.to_numpy())))
    if len(waiting):
        raise ReviewError(
            f"every stratum of predicted clusters needs a finished review before estimating; "
            f"none yet in {examples(waiting)}"
        )
    if len(drawn.records) == 0:
        raise ReviewError("recall needs a finished review of a record drawn for it first")
    return drawn.reviewed(truth), finished_units(queue, truth)


def design_strata(
    prediction: pd.Series,
    design: str,
    *,
    take_all_size: int | None = None,
    other: pd.Series | None = None,
) -> pd.Series:
    """Stratum of every frame record of a stratified design (bands of predicted cluster
    size, :func:`~er_evaluation.designs.size_strata`) or of a change design (the records
    whose predicted cluster differs between ``prediction`` and ``other`` on the records
    they share, :func:`~er_evaluation.designs.changed_records`)."""
    if design == "stratified":
        return size_strata(prediction, take_all_size=take_all_size)
    if other is None:
        raise ReviewError("the change design needs the version to compare with")
    shared = prediction.index.intersection(other.index)
    changed = changed_records(prediction.loc[shared], other.loc[shared])
    if not changed.any():
        raise ReviewError("the two versions agree on every shared record: nothing to compare")
    return pd.Series("changed", index=changed.index[changed.to_numpy()], name="stratum")


def reviewer_queue(queue: pd.DataFrame, reviewer: str) -> pd.DataFrame:
    """Rows of ``queue`` assigned to ``reviewer``, as first or second reviewer."""
    second = queue["second_reviewer"] if "second_reviewer" in queue else None
    mine = queue["reviewer"] == reviewer
    if second is not None:
        mine |= second == reviewer
    return queue[mine]


def workload(queue: pd.DataFrame) -> pd.DataFrame:
    """Per reviewer (rows, in name order): ``units`` and ``records`` assigned as first
    reviewer, ``second_units`` and ``second_records`` as blind second reviewer, and the
    totals ``all_units`` and ``all_records`` each has to review. Empty for a shared queue."""
    parts = []
    for role, column in (("", "reviewer"), ("second_", "second_reviewer")):
        rows = queue[queue[column].notna()]
        grouped = rows.groupby(column)
        parts.append(
            pd.DataFrame(
                {f"{role}units": grouped["unit"].nunique(), f"{role}records": grouped.size()}
            )
        )
    table = pd.concat(parts, axis=1).fillna(0).astype("int64").sort_index()
    table.index.name = "reviewer"
    table["all_units"] = table["units"] + table["second_units"]
    table["all_records"] = table["records"] + table["second_records"]
    return table


def double_reviewed(queue: pd.DataFrame) -> pd.Series:
    """Boolean per queue row: is its unit assigned to two reviewers?"""
    if "second_reviewer" not in queue:
        return pd.Series(False, index=queue.index)
    return queue["second_reviewer"].notna()


def reviewed_sample(
    queue: pd.DataFrame,
    truth: pd.Series,
    *,
    design: str,
    prediction: pd.Series,
    blocks: pd.Series | None = None,
    take_all_size: int | None = None,
    other: pd.Series | None = None,
) -> tuple[Sample | None, int]:
    """The design-based :class:`~er_evaluation.sampling.Sample` of what has been reviewed.

    ``truth`` holds the reviewed true clusters (record -> entity). Only finished units
    count: a record design uses every sampled record already in a reviewed true cluster
    (its cluster drawn with probability proportional to size, one draw per sampled
    record, without replacement from ``len(prediction)`` records); cluster and block
    designs use the units whose every record is in a reviewed true cluster (uniform
    draws without replacement from the predicted clusters or blocks); a stratified or
    change design uses every drawn record already in a reviewed true cluster, within the
    strata of :func:`design_strata` (each stratum needs one). Returns
    ``(sample, n_finished_units)`` or ``(None, 0)`` before the first finished unit.
    """
    done = queue["record_id"].isin(truth.index)
    if design in STRATIFIED_DESIGNS:
        finished = queue[done.to_numpy()]
        if finished.empty:
            return None, 0
        F = design_strata(prediction, design, take_all_size=take_all_size, other=other)
        F = F.value_counts(sort=False)
        drawn = pd.Series(finished["stratum"].to_numpy(), index=finished["record_id"].to_numpy())
        waiting = F.index.difference(pd.Index(pd.unique(drawn.to_numpy())))
        if len(waiting):
            raise ReviewError(
                f"every stratum needs a finished review before estimating; none yet in "
                f"{examples(waiting)}"
            )
        return stratified_sample(truth, drawn, F), finished_units(queue, truth)
    if design == "records":
        sampled = queue.loc[done, "record_id"]
        if sampled.empty:
            return None, 0
        draws = truth.loc[sampled].value_counts()
        reference = truth[truth.isin(draws.index)]
        sample = benchmark_sample(
            reference,
            weights="cluster_size",
            multiplicity=draws,
            replace=False,
            population_size=len(prediction),
            design="records",
        )
        return sample, finished_units(queue, truth)
    finished = done.groupby(queue["unit"]).all()
    units = finished.index[finished.to_numpy()]
    if len(units) == 0:
        return None, 0
    rows = queue[queue["unit"].isin(units)]
    if design == "clusters":
        sample = Sample(
            reference=truth.loc[rows["record_id"]],
            units=pd.Index(units),
            multiplicity=np.ones(len(units), dtype=np.int64),
            probability=np.ones(len(units)),
            design="clusters",
            weights="uniform",
            replace=False,
            population_size=int(prediction.nunique()),
            sample_of="predicted",
        )
        return sample, finished_units(queue, truth)
    if design != "blocks":
        raise ReviewError(f"design must be one of {list(DESIGNS)}, got {design!r}")
    if blocks is None:
        raise ReviewError("the block design needs a block column")
    # The true clusters of the finished blocks, each record labelled with its block.
    reference = truth[truth.isin(truth.loc[rows["record_id"]].unique())]
    sample = benchmark_sample(
        reference,
        weights="uniform",
        blocks=blocks.loc[reference.index],
        replace=False,
        population_size=int(blocks.loc[prediction.index].nunique()),
        design="blocks",
    )
    return sample, finished_units(queue, truth)
