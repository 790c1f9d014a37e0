"""The frame of each planned design as the planner sees it: units per stratum F_h,
stratum standard deviations S_h (from :mod:`er_evaluation.planning._sources`), records
per unit, and the words a plan prints about them; and the heavy-tail check that flags a
record-design plan of precision as optimistic."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from er_evaluation.errors import examples
from er_evaluation.planning._models import cluster_sizes
from er_evaluation.planning._sources import (
    F1,
    MODEL_CONFIDENCE,
    RECORD_ESTIMATOR,
    P,
    R,
    pilot_rate,
    strata_of,
    stratum_sd_from_cluster_rates,
    stratum_sd_from_clusters,
    stratum_sd_from_rates,
    stratum_sd_from_sample,
)
from er_evaluation.sampling import Sample

__all__ = [
    "HEAVY_TAIL_EFFECTIVE_CLUSTERS",
    "DesignFrame",
    "link_effective_clusters",
    "predicted_cluster_frame",
    "record_frame",
]

HEAVY_TAIL_EFFECTIVE_CLUSTERS = 100.0
"""Below this link-weighted effective number of predicted clusters
(:func:`link_effective_clusters`) a prediction counts as heavy-tailed: the record design's
precision variance is under-estimated there. Measured values: Zipf(2) sizes capped at
5,000 (200k records) 12.5, PatentsView 2022-06-30 48-49 (record-design plans 2.6x and 1.34x
the target), RLdata10000 about 1,000."""


def link_effective_clusters(prediction: pd.Series) -> float:
    """Kish's effective number of predicted clusters weighted by their predicted links,
    (Σ L)² / Σ L² with L = C(|ĉ|, 2): small when a few clusters carry most links (heavy
    tails; see :data:`HEAVY_TAIL_EFFECTIVE_CLUSTERS`)."""
    s = cluster_sizes(prediction).to_numpy(dtype=float)
    links = s * (s - 1) / 2
    total = float(links.sum())
    return total**2 / float((links**2).sum()) if total > 0 else math.inf


def _by_size(prediction: pd.Series, labels: pd.Series) -> bool:
    """Whether the strata of the predicted clusters (``labels``, index: cluster id) are a
    function of predicted size, as the misattribution model's strata must be."""
    sizes = cluster_sizes(prediction).reindex(labels.index)
    frame = pd.DataFrame({"s": sizes.to_numpy(), "h": labels.to_numpy()})
    return bool((frame.groupby("s")["h"].nunique() <= 1).all())


def cluster_labels(strata: pd.Series, prediction: pd.Series) -> pd.Series:
    """Stratum of every predicted cluster (index: cluster id) from record-level labels
    that must be constant within each predicted cluster (e.g. size bands)."""
    strata = strata_of(strata, prediction)
    frame = pd.DataFrame({"c": prediction.to_numpy(), "h": strata.to_numpy()})
    n_labels = frame.groupby("c", sort=False)["h"].nunique()
    mixed = n_labels.index[n_labels.to_numpy() > 1]
    if len(mixed):
        raise ValueError(
            f"a design of predicted clusters needs one stratum per predicted cluster; "
            f"{len(mixed)} cluster(s) have records in several strata: {examples(mixed)}"
        )
    return frame.groupby("c", sort=False)["h"].first().rename("stratum")


@dataclass(frozen=True)
class DesignFrame:
    """A design's frame as the planner sees it: units per stratum (F_h), the stratum
    standard deviations S_h, the mean records of a unit per stratum, and the words the
    plan prints about where S_h came from, which estimator it plans and why it may be
    optimistic."""

    sizes: pd.Series
    sd: pd.Series
    unit_records: pd.Series
    source: str
    estimator: str
    notes: tuple[str, ...] = ()


def predicted_cluster_frame(
    prediction: pd.Series,
    strata: pd.Series,
    pilot: Sample | None,
    error_rate: float | None,
) -> DesignFrame:
    """Precision on whole predicted clusters: S_h from a pilot of predicted clusters, or
    from the misattribution model at an assumed rate or at the rate a pilot of true
    clusters estimates."""
    labels = cluster_labels(strata, prediction)
    model = (
        " (a cluster of t records, t deconvolved from the predicted sizes, keeps "
        "K ~ Binomial(t, 1 - rate) and receives Poisson(rate t) foreign records; S_h² at "
        f"the upper end of its one-sided {MODEL_CONFIDENCE:.0%} spread over populations of "
        "the stratum's predicted clusters)"
    )
    if pilot is not None:
        words, rate = pilot_rate(prediction, pilot)
        modelled = (
            stratum_sd_from_cluster_rates(prediction, labels, rate, confidence=MODEL_CONFIDENCE)
            if _by_size(prediction, labels)
            else None
        )
        if pilot.sample_of == "predicted":
            observed = stratum_sd_from_clusters(prediction, pilot, labels)
            sd = (
                observed
                if modelled is None
                else np.maximum(observed, modelled.reindex(observed.index))
            )
            source = (
                f"from a reviewed pilot of {pilot.n_units:,} predicted clusters "
                f"({pilot.n_draws:,} draws, design {pilot.design!r})"
            )
            if modelled is not None:
                source += (
                    f", or where larger the misattribution model at the pilot's pessimistic "
                    f"rate ({words}){model}: a pilot's few clusters per stratum seldom show "
                    f"the rare impure ones"
                )
        else:
            if modelled is None:
                raise ValueError(
                    "a pilot of true clusters plans strata of predicted cluster size only: "
                    "give a pilot of predicted clusters for these strata"
                )
            sd = modelled
            source = (
                f"misattribution model at the rate of the reviewed pilot/benchmark of "
                f"{pilot.n_units:,} true clusters (design {pilot.design!r}; {words}){model}"
            )
    else:
        if isinstance(error_rate, pd.Series):
            raise ValueError("the predicted-cluster design takes one error_rate value")
        rate = float(error_rate)
        sd = stratum_sd_from_cluster_rates(prediction, labels, rate, confidence=MODEL_CONFIDENCE)
        source = f"misattribution model at an assumed misattribution rate {rate}{model}"
    F = labels.value_counts(sort=False)
    unit_records = cluster_sizes(prediction).groupby(labels).mean().reindex(F.index)
    return DesignFrame(
        F,
        sd.reindex(F.index),
        unit_records,
        source,
        "precision by duality: stratified ratio of true to predicted links",
    )


def record_frame(
    prediction: pd.Series,
    strata: pd.Series,
    metric: str,
    pilot: Sample | None,
    error_rate: float | pd.Series | None,
    baseline: pd.Series | None,
) -> DesignFrame:
    """Any planned metric (or paired difference) on records drawn within strata: S_h
    from a pilot of true clusters, or from an assumed misattribution rate."""
    strata = strata_of(strata, prediction)
    if baseline is not None and pilot is None:
        raise ValueError(
            "a paired difference is planned from a pilot: an assumed rate does not say "
            "where the two predictions differ"
        )
    if pilot is not None:
        sd = stratum_sd_from_sample(prediction, pilot, strata, metric, baseline=baseline)
        source = (
            f"from the reviewed pilot/benchmark ({pilot.n_units:,} true clusters, "
            f"{pilot.n_draws:,} draws, design {pilot.design!r})"
        )
        if baseline is None:  # where two predictions differ has no rate model
            words, rate = pilot_rate(prediction, pilot, metric)
            modelled = stratum_sd_from_rates(prediction, strata, rate, metric)
            sd = np.maximum(sd, modelled.reindex(sd.index))
            source += (
                f", or where larger the misattribution model at the pilot's pessimistic rate "
                f"({words}): a pilot's few records seldom show the rare split clusters"
            )
    else:
        sd = stratum_sd_from_rates(prediction, strata, error_rate, metric)
        source = f"from an assumed misattribution rate {error_rate} " + (
            "(binomial model: a true cluster of s records keeps K ~ Binomial(s, 1 - rate) "
            "together; true size ~ predicted size)"
            if metric == R
            else "(census of a simulated population: the prediction taken as truth, "
            "misattributed at that rate)"
        )
    F = strata.value_counts(sort=False)
    codes, _ = pd.factorize(prediction.to_numpy())
    size = pd.Series(np.bincount(codes)[codes], index=prediction.index)
    unit_records = size.groupby(strata.to_numpy()).mean().reindex(F.index)
    return DesignFrame(
        F,
        sd.reindex(F.index),
        unit_records,
        source,
        f"weight-share {RECORD_ESTIMATOR[metric]} estimator",
        heavy_tail_notes(prediction, metric),
    )


def heavy_tail_notes(prediction: pd.Series, metric: str) -> tuple[str, ...]:
    """Why a record-design plan of precision or F1 is optimistic on a heavy-tailed
    prediction (none otherwise)."""
    effective = link_effective_clusters(prediction)
    if metric not in (P, F1) or effective >= HEAVY_TAIL_EFFECTIVE_CLUSTERS:
        return ()
    remedy = (
        "; plan precision on the predicted-cluster design instead"
        if metric == P
        else "; plan precision (on the predicted-cluster design) and recall separately"
    )
    return (
        f"heavy-tailed prediction (link-weighted effective number of predicted "
        f"clusters {effective:.1f} < {HEAVY_TAIL_EFFECTIVE_CLUSTERS:g}): the record "
        f"design's {metric} variance is under-estimated there (misattributed records "
        f"of giant true clusters sit in small predicted clusters), so this plan is "
        f"optimistic" + remedy,
    )
