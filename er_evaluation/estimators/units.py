"""Per-unit quantities of a sample, computed once per prediction from ONE contingency.

Every estimator in this package is a smooth function of design-weighted means of
per-unit quantities (Binette et al. 2023 §2.3, appendix A.2). For a sampled unit u (a
true cluster, or a block of whole true clusters) and the prediction Ĉ:

- ``size``: records of u in the population; ``n_clusters``: true clusters in u;
- ``pairs`` = |T_u| = Σ_{c⊂u} C(|c|,2); ``tp`` = |T_u ∩ P_u| = Σ_{c⊂u} f(c) with
  f(c) = Σ_ĉ C(|c∩ĉ|,2);
- ``plinks`` = |P_u| = Σ_ĉ C(|ĉ∩u|,2); ``pout`` = |P_u^-| = Σ_ĉ |ĉ∩u|(|ĉ|-|ĉ∩u|) (for a
  cluster unit, |P_c| = f(c) and |P_c^-| = out(c));
- ``exact``: true clusters of u that are exactly a predicted cluster; ``b3p`` =
  Σ_{c,ĉ} n²/|ĉ| and ``b3r`` = Σ_{c,ĉ} n²/|c| (B-cubed sums, n = |c∩ĉ|); ``nlogn`` =
  Σ n log n and ``slogs`` = Σ_c |c| log |c| (entropy sums);
- ``minority_checked``: the predicted links ``|ĉ∩u| (|ĉ|-1)/2`` of u's records that sit as
  a minority (``2|ĉ∩u| < |ĉ|``: misattributed into ĉ, or merged into a larger entity's
  cluster) in a predicted cluster ĉ whose *host* (the entity holding more than half of it)
  is also a sampled unit: the same links seen from the sampled records themselves, which
  the hosts count exactly (``UnitTable.host_minority``) — see
  :func:`~er_evaluation.estimators.diagnostics.host_view_value`.

Population totals come from the full prediction (``scope="prediction"`` contingency):
N records, |P| predicted links, number of predicted clusters, Σ_ĉ |ĉ| log |ĉ|. Grouped
sums only (``np.bincount`` on codes); no loop over records, pairs or clusters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from er_evaluation import _contingency
from er_evaluation._contingency_table import Contingency, comb2, xlogx
from er_evaluation.errors import CoverageError, examples
from er_evaluation.estimators.ratio import fpc
from er_evaluation.sampling import Sample

__all__ = ["UnitTable", "unit_table"]

QUANTITIES = (
    "size",
    "n_clusters",
    "pairs",
    "tp",
    "plinks",
    "pout",
    "exact",
    "b3p",
    "b3r",
    "nlogn",
    "slogs",
)


@dataclass(frozen=True, eq=False)
class UnitTable:
    """Per-unit quantities (``q[name]``, one value per distinct sampled unit, raw: not
    divided by the selection probability) with the sample's design and the population
    totals of the prediction. ``probability`` is normalised to mean 1 over draws.
    ``naive`` is the same table computed as if the reviewed records were the whole
    population (for the naive baseline). ``links_effective`` is the Kish size of the
    predicted links over the predicted clusters, ``(Σ L)²/Σ L²`` with ``L = C(|ĉ|, 2)``
    (known from the full prediction; see :mod:`er_evaluation.estimators.diagnostics`).
    ``host_minority``: the minority links of the predicted clusters whose host is a
    sampled unit, as the hosts count them (with ``q["minority_checked"]``, the same links
    seen from the sampled minority records); ``size_histogram``: the prediction's distinct
    cluster sizes and their numbers of clusters (None from an engine).
    ``unreviewed_links``: for a group's table
    (:func:`~er_evaluation.estimators.groups.group_unit_tables`), the share of the group's
    predicted links in its large predicted clusters that no reviewed record reaches, their
    effective number weighted by links and their records (for the links across groups, the
    same of the links across groups in the predicted clusters; None when not computed)."""

    q: dict[str, np.ndarray]
    sample: Sample
    probability: np.ndarray
    n_records_population: int
    predicted_links: int
    n_pred_clusters: int
    pred_size_entropy_sum: float
    n_records_used: int
    dropped_ids: pd.Index
    naive: UnitTable | None = None
    links_effective: float = math.nan
    host_minority: float = 0.0
    size_histogram: tuple[np.ndarray, np.ndarray] | None = None
    unreviewed_links: tuple[float, float, int] | None = None

    @property
    def dropped_records(self) -> int:
        """Number of sampled records absent from the prediction, dropped under
        ``on_missing="restrict"``."""
        return len(self.dropped_ids)

    @property
    def unit_kind(self) -> str:
        return "block" if self.sample.blocks is not None else "cluster"

    @property
    def multiplicity(self) -> np.ndarray:
        return self.sample.multiplicity

    @property
    def theta(self) -> float:
        return fpc(self.sample.n_draws, self.sample.population_size, replace=self.sample.replace)

    def weighted(self, name: str) -> np.ndarray:
        """Quantity divided by the unit's selection probability (the paper's ``X/p``)."""
        return self.q[name] / self.probability


def _quantities(
    ct: Contingency, pred_size: np.ndarray, unit_of_ref: np.ndarray, n_units: int
) -> dict[str, np.ndarray]:
    count = ct.count
    cps = pred_size[ct.pred].astype(float)
    crs = ct.ref_size[ct.ref].astype(float)
    cell_unit = unit_of_ref[ct.ref]
    per_ref = {
        "size": ct.ref_size.astype(float),
        "n_clusters": np.ones(ct.n_ref_clusters),
        "pairs": comb2(ct.ref_size).astype(float),
        "tp": ct.per_reference(comb2(count).astype(float)),
        "exact": ct.per_reference(((count == crs) & (count == cps)).astype(float)),
        "b3p": ct.per_reference(count.astype(float) ** 2 / cps),
        "b3r": ct.per_reference(count.astype(float) ** 2 / crs),
        "nlogn": ct.per_reference(xlogx(count)),
        "slogs": xlogx(ct.ref_size),
    }
    q = {k: np.bincount(unit_of_ref, weights=v, minlength=n_units) for k, v in per_ref.items()}
    # |ĉ ∩ u| for every (predicted cluster, unit) pair touched by the sample
    key = ct.pred.astype(np.int64) * n_units + cell_unit
    codes, keys = pd.factorize(key)
    inter = np.bincount(codes, weights=count).astype(float)
    pu = np.asarray(keys, dtype=np.int64)
    unit = pu % n_units
    size_hat = pred_size[pu // n_units].astype(float)
    q["plinks"] = np.bincount(unit, weights=inter * (inter - 1) / 2, minlength=n_units)
    q["pout"] = np.bincount(unit, weights=inter * (size_hat - inter), minlength=n_units)
    return q


def _host_view(
    ct: Contingency, pred_size: np.ndarray, unit_of_ref: np.ndarray, n_units: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per unit, the predicted links of its records sitting as a minority in a predicted
    cluster whose host (the entity holding more than half of it) is also a sampled unit
    (``minority_checked``), and the minority links of the clusters it hosts as it counts
    them, ``Σ_{ĉ hosted by u} (|ĉ| - |ĉ ∩ u|)(|ĉ| - 1)/2`` (their total is
    ``host_minority``)."""
    key = ct.pred.astype(np.int64) * n_units + unit_of_ref[ct.ref]
    codes, keys = pd.factorize(key)
    inter = np.bincount(codes, weights=ct.count).astype(float)
    keys = np.asarray(keys, dtype=np.int64)
    unit, pred = keys % n_units, keys // n_units
    size = pred_size[pred].astype(float)
    host = 2 * inter > size
    checked = np.isin(pred, pred[host]) & (2 * inter < size)
    minority = np.bincount(
        unit, weights=np.where(checked, inter * (size - 1) / 2, 0.0), minlength=n_units
    )
    hosted = np.bincount(
        unit[host], weights=(size[host] - inter[host]) * (size[host] - 1) / 2, minlength=n_units
    )
    return minority, hosted


def _kish(total: float, squares: float) -> float:
    """Kish size ``(Σ L)²/Σ L²`` of the predicted links ``L = C(|ĉ|, 2)`` over the predicted
    clusters, from the two population sums (NaN without links)."""
    return float(total) ** 2 / squares if squares > 0 else math.nan


def normalized_probability(sample: Sample) -> np.ndarray:
    """The sample's per-unit selection probabilities scaled to mean 1 over the draws
    (only their ratios matter to the estimators)."""
    p = np.asarray(sample.probability, dtype=float)
    m = np.asarray(sample.multiplicity, dtype=float)
    return p / (m @ p / m.sum())


def unit_table(
    prediction: pd.Series,
    sample: Sample,
    *,
    on_missing: str = "error",
    validate: bool = True,
    check_population: bool = True,
) -> UnitTable:
    """Per-unit quantities of ``sample`` under ``prediction`` (one contingency).

    ``prediction`` must be the FULL prediction of the population: N, |P| and the number of
    predicted clusters are taken from it. Every sampled record must be in it:
    ``on_missing="error"`` raises :class:`CoverageError` naming missing ids;
    ``on_missing="restrict"`` drops them with a :class:`CoverageWarning` saying how many
    (the sampled clusters are then evaluated on their records present in this
    population; a unit left with no record contributes zeros). A prediction that cannot
    be the sample's whole population (:meth:`Sample.check_population`) is an error or a
    warning; ``check_population=False`` is for the duality of predicted-cluster samples,
    whose "prediction" is the reviewed truth of the sampled records.
    """
    if sample.sample_of != "reference":
        raise NotImplementedError(
            "estimators for samples of predicted clusters are computed by "
            "er_evaluation.estimators.estimate, which swaps the roles (duality)"
        )
    ct = _contingency.contingency(
        prediction, sample.reference, scope="prediction", on_missing=on_missing, validate=validate
    )
    if check_population:
        sample.check_population(ct.n_records, ct.n_shared, same_frame=on_missing == "error")
    units = sample.units
    n_units = len(units)
    if sample.blocks is None:
        unit_of_ref = units.get_indexer(ct.ref_labels)
    else:
        ref_code = ct.ref_labels.get_indexer(sample.reference.to_numpy())
        block_code = units.get_indexer(sample.blocks.reindex(sample.reference.index).to_numpy())
        ok = ref_code >= 0
        unit_of_ref = np.full(ct.n_ref_clusters, -1, dtype=np.int64)
        unit_of_ref[ref_code[ok]] = block_code[ok]
    if (unit_of_ref < 0).any():
        bad = ct.ref_labels[unit_of_ref < 0]
        raise CoverageError(
            f"{len(bad)} reference cluster(s) are not sampled units of the sample: {examples(bad)}"
        )
    unit_of_ref = unit_of_ref.astype(np.int64)
    p = normalized_probability(sample)
    pred_size = ct.pred_size
    q = _quantities(ct, pred_size, unit_of_ref, n_units)
    q["minority_checked"], hosted = _host_view(ct, pred_size, unit_of_ref, n_units)

    # naive baseline: the reviewed records taken as the whole population
    sub_size = ct.per_prediction(ct.count.astype(float)).astype(np.int64)
    naive = UnitTable(
        q=_quantities(ct, sub_size, unit_of_ref, n_units),
        sample=sample,
        probability=np.ones(n_units),
        n_records_population=ct.n_shared,
        predicted_links=int(comb2(sub_size).sum()),
        n_pred_clusters=int((sub_size > 0).sum()),
        pred_size_entropy_sum=float(xlogx(sub_size).sum()),
        n_records_used=ct.n_shared,
        dropped_ids=ct.dropped_reference_ids,
    )
    return UnitTable(
        q=q,
        sample=sample,
        probability=p,
        n_records_population=ct.n_records,
        predicted_links=ct.predicted_links,
        n_pred_clusters=ct.n_pred_clusters,
        pred_size_entropy_sum=ct.population.size_entropy,
        n_records_used=ct.n_shared,
        dropped_ids=ct.dropped_reference_ids,
        naive=naive,
        links_effective=_kish(ct.population.links, ct.population.links_squared),
        host_minority=float(hosted.sum()),
        size_histogram=ct.population.size_histogram,
    )
