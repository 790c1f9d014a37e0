"""Sampling designs that create what analysts review, and the :class:`Sample` they return.

A :class:`Sample` is everything a design-based estimator needs, so estimators take a
sample and no other design argument:

- ``reference``: the reviewed (true) cluster of every record of the sampled units;
- ``units``: the distinct sampled unit ids (true cluster ids, or block ids) with their
  with-replacement ``multiplicity`` (a unit drawn twice counts twice; never dropped);
- ``probability``: the per-draw **selection probability** of each unit, known up to a
  constant. These are always probabilities, never inverse-probability weights: an
  argument called ``weights`` anywhere in this package means "selection probabilities up
  to a constant" ("uniform", "cluster_size", or explicit positive per-unit values);
- ``design`` ("records", "clusters", "blocks" or "benchmark"), ``weights`` (which kind of
  probabilities: "uniform", "cluster_size" or "custom"), ``replace``;
- ``population_size``: the number of units ``T`` of the sampling frame when known (records
  for record sampling, clusters, blocks), for the finite-population correction of
  sampling without replacement.

Sampling records uniformly and taking their true clusters is the same as sampling
clusters with probability proportional to size (Binette et al. 2023, §2.4); :func:`sample_records`
returns that cluster sample with the number of sampled records per cluster as
multiplicity.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd

from er_evaluation._parameters import check_count, check_flag, check_multiplicity, check_seed
from er_evaluation.clustering import validate_membership
from er_evaluation.errors import CoverageError, PopulationWarning, examples, warn
from er_evaluation.strata import Strata

__all__ = [
    "Sample",
    "sample_records",
    "sample_clusters",
    "sample_blocks",
    "benchmark_sample",
    "selection_probability",
    "check_blocks",
]

Weights = Literal["uniform", "cluster_size"] | pd.Series


@dataclass(frozen=True, eq=False)
class Sample:
    """A design-based sample of reviewed units (see the module docstring for the fields).

    ``probability[k]`` is the per-draw selection probability of ``units[k]`` up to a
    constant (not an inverse weight). ``blocks`` maps every sampled record to its block id
    for block designs (``None`` otherwise). ``strata`` describes a stratified design
    (:class:`~er_evaluation.strata.Strata`: per-stratum frame sizes, draws and the draw
    groups; ``None`` for unstratified designs). ``sample_of`` is ``"reference"`` when the
    sampled units are true clusters / blocks of true clusters, ``"predicted"`` when they are
    predicted clusters whose records were reviewed (precision/recall duality).
    """

    reference: pd.Series
    units: pd.Index
    multiplicity: np.ndarray
    probability: np.ndarray
    design: str
    weights: str
    replace: bool
    population_size: int | None = None
    blocks: pd.Series | None = None
    sample_of: str = "reference"
    strata: Strata | None = None

    def __post_init__(self) -> None:
        if len(self.units) == 0:
            raise ValueError("empty sample: no sampled units")
        if len(self.multiplicity) != len(self.units) or len(self.probability) != len(self.units):
            raise ValueError("units, multiplicity and probability must have the same length")
        if not self.units.is_unique:
            raise ValueError(
                f"duplicated unit ids: {examples(self.units[self.units.duplicated()])}"
            )
        # frozen: the checked int64 copy replaces what was given (1.7 draws is an error)
        object.__setattr__(self, "multiplicity", check_multiplicity(self.multiplicity, self.units))
        if self.population_size is not None:
            object.__setattr__(
                self, "population_size", check_count(self.population_size, "population_size")
            )
        _check_positive(pd.Series(self.probability, index=self.units), "probability")
        if self.sample_of not in ("reference", "predicted"):
            raise ValueError(
                f"sample_of must be 'reference' or 'predicted', got {self.sample_of!r}"
            )
        if self.sample_of == "reference":
            present = pd.Index(pd.unique(self.unit_of_record.to_numpy()))
            extra = present.difference(self.units)
            if len(extra):
                raise ValueError(
                    f"{len(extra)} reviewed cluster/block id(s) are not sampled units: "
                    f"{examples(extra)}"
                )
            empty = self.units.difference(present)
            if len(empty):
                raise ValueError(
                    f"{len(empty)} sampled unit(s) have no reviewed record: {examples(empty)}"
                )
        if self.strata is not None:
            _check_strata(self)
        if (
            not self.replace
            and self.population_size is not None
            and self.n_draws > self.population_size
        ):
            raise ValueError(
                f"{self.n_draws} draws without replacement from {self.population_size} units"
            )

    @property
    def n_draws(self) -> int:
        """Number of draws n (sum of multiplicities)."""
        return int(np.sum(self.multiplicity))

    @property
    def n_units(self) -> int:
        """Number of distinct sampled units."""
        return len(self.units)

    @property
    def n_records(self) -> int:
        """Number of reviewed records."""
        return len(self.reference)

    @property
    def unit_of_record(self) -> pd.Series:
        """Sampled unit of every reviewed record (its block, or its own cluster)."""
        return self.blocks if self.blocks is not None else self.reference

    def reviewed_predicted(self, truth: pd.Series) -> Sample:
        """This sample drawn from the PREDICTION (its units are predicted clusters, e.g.
        ``sample_clusters(prediction, n)``), with the reviewed true cluster ids ``truth``
        of its records attached: a sample of predicted clusters (``sample_of="predicted"``).
        By duality (Binette et al. 2023, Remark 2) it estimates precision-type metrics (pairwise,
        cluster and B-cubed precision). Every record of every sampled predicted cluster must
        be labelled in ``truth`` (extra records are ignored)."""
        if self.blocks is not None:
            raise ValueError("block samples cannot be reinterpreted as predicted-cluster samples")
        truth = validate_membership(truth, name="truth")
        missing = self.reference.index.difference(truth.index)
        if len(missing):
            raise ValueError(
                f"{len(missing)} record(s) of the sampled predicted clusters have no reviewed "
                f"true cluster: {examples(missing)}"
            )
        return replace(self, reference=truth.reindex(self.reference.index), sample_of="predicted")

    @property
    def is_census(self) -> bool:
        """True when the sample is the whole frame: every unit (or record) drawn once,
        without replacement (for a stratified sample: every stratum taken entirely)."""
        if self.strata is not None:
            return bool(self.strata.take_all.all())
        if self.replace or self.population_size is None:
            return False
        drawn = self.n_draws if self.design == "records" else self.n_units
        return drawn == self.population_size

    def check_population(
        self, n_records: int, n_reviewed: int, *, same_frame: bool = True, name: str = "prediction"
    ) -> None:
        """Check that a prediction of ``n_records`` records, ``n_reviewed`` of them reviewed
        records of this sample, can be the whole population the sample was drawn from.

        Estimators take N and |P| from the prediction, so a prediction cut down to the
        reviewed records returns the sample's own plug-in value (e.g. precision 1.0 with SE
        0) as if it were the population's. When the sample knows its frame
        (``population_size``) a smaller prediction is a :class:`CoverageError` (with
        ``same_frame=False``, for a prediction of another population evaluated on the
        records it shares with the sample, only one holding nothing but reviewed records);
        a prediction holding nothing but reviewed records of a sample without a known frame
        gets a :class:`PopulationWarning` (it is right only if every unit was drawn)."""
        cut = (
            "pass the prediction of the whole population (its number of records and "
            "predicted links), not the prediction cut down to the sample"
        )
        # record frames count records: a prediction holding every record is the population
        records_frame = self.design == "records" or (
            self.strata is not None and self.strata.frame == "records"
        )
        if self.population_size is not None and not self.is_census:
            if same_frame and records_frame and n_records < self.population_size:
                raise CoverageError(
                    f"{name} covers {n_records:,} records but the sample was drawn from a "
                    f"population of {self.population_size:,} records; {cut} (for a "
                    "prediction of another population, restrict to the shared records)"
                )
            frame_units = n_records if records_frame else self.n_units
            if n_records <= n_reviewed and self.population_size > frame_units:
                raise CoverageError(
                    f"{name} holds only the {n_reviewed:,} reviewed records of the sample, "
                    f"which was drawn from {self.population_size:,} units; {cut}"
                )
        elif n_records <= n_reviewed and not self.is_census:
            warn(
                f"{name} holds only the {n_reviewed:,} reviewed records of the sample: the "
                "estimate is the sample's own value, right only if the sample covers the "
                f"whole population; otherwise {cut}",
                PopulationWarning,
            )

    def __repr__(self) -> str:
        t = "" if self.population_size is None else f" of {self.population_size}"
        if self.strata is not None:
            t += f" in {len(self.strata.names)} strata"
        return (
            f"Sample(design={self.design!r}, weights={self.weights!r}, replace={self.replace}, "
            f"{self.n_draws} draws{t}, {self.n_units} distinct units, {self.n_records} records)"
        )


def _check_strata(sample: Sample) -> None:
    st = sample.strata
    if ((st.row_unit < 0) | (st.row_unit >= len(sample.units))).any():
        raise ValueError("strata draw groups refer to units outside the sample")
    per_unit = np.bincount(st.row_unit, weights=st.row_count, minlength=len(sample.units))
    if not np.array_equal(per_unit.astype(np.int64), np.asarray(sample.multiplicity)):
        raise ValueError("each unit's multiplicity must equal its draws over the strata")
    if st.replace != sample.replace:
        raise ValueError("the strata and the sample disagree on sampling with replacement")


def _check_positive(p: pd.Series, what: str) -> None:
    values = np.asarray(p, dtype=float)
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        raise ValueError(
            f"{what} must be finite and > 0 (selection probabilities up to a constant); "
            f"{int(bad.sum())} unit(s) are not, e.g. {examples(p.index[bad])}"
        )


def selection_probability(sizes: pd.Series, weights: Weights) -> tuple[pd.Series, str]:
    """Per-unit selection probabilities (up to a constant) for units with ``sizes``.

    ``weights`` is "uniform" (all equal), "cluster_size" (proportional to the number of
    records: what sampling records uniformly does to their clusters) or a Series of
    explicit positive values indexed by unit id (probabilities up to a constant, NOT
    inverse weights). Returns the probabilities aligned with ``sizes`` and the kind.
    """
    if isinstance(weights, str):
        if weights == "uniform":
            return pd.Series(1.0, index=sizes.index), "uniform"
        if weights == "cluster_size":
            return sizes.astype(float), "cluster_size"
        raise ValueError(f"weights must be 'uniform', 'cluster_size' or a Series, got {weights!r}")
    if not isinstance(weights, pd.Series):
        raise TypeError("weights must be 'uniform', 'cluster_size' or a pandas Series")
    missing = sizes.index.difference(weights.index)
    if len(missing):
        raise ValueError(f"weights are missing for {len(missing)} unit(s): {examples(missing)}")
    p = weights.reindex(sizes.index).astype(float)
    _check_positive(p, "weights")
    return p, "custom"


def _check_draw(n, replace, seed) -> tuple[int, bool, object]:
    """A draw's size, replacement and seed, checked at a sampling function's door."""
    return (
        check_count(n, "n"),
        check_flag(replace, "replace"),
        check_seed(seed, generator=True),
    )


def _draw(
    sizes: pd.Series, weights: Weights, n: int, replace: bool, seed
) -> tuple[pd.Index, np.ndarray, np.ndarray, str]:
    """The draw of :func:`sample_clusters` and :func:`sample_blocks`: ``n`` units of
    ``sizes``' index with selection probabilities ``weights``
    (:func:`selection_probability`). Returns the distinct drawn units, their multiplicities,
    their selection probabilities (up to a constant) and the kind of weights; ``n``,
    ``replace`` and ``seed`` checked at the caller's door."""
    p, kind = selection_probability(sizes, weights)
    if not replace and kind != "uniform":
        raise ValueError(
            "unequal-probability sampling without replacement has no fixed per-draw "
            "selection probabilities for the estimators; use replace=True (repeats are kept "
            "as multiplicities) or sample_records(..., replace=False)"
        )
    if not replace and n > len(sizes):
        raise ValueError(f"cannot draw n={n} units without replacement from {len(sizes)}")
    prob = p.to_numpy()
    idx = np.random.default_rng(seed).choice(
        len(sizes), size=n, replace=replace, p=prob / prob.sum()
    )
    codes, counts = np.unique(idx, return_counts=True)
    return pd.Index(sizes.index)[codes], counts.astype(np.int64), prob[codes].astype(float), kind


def sample_records(clustering: pd.Series, n: int, *, replace: bool = True, seed=None) -> Sample:
    """Sample ``n`` records uniformly at random; their clusters become the sample.

    Equivalent to sampling clusters with probability proportional to size
    (``weights="cluster_size"``); a cluster reached by k sampled records has multiplicity k.
    The population is the records of ``clustering`` (``population_size`` = number of
    records, used for the finite-population correction when ``replace=False``). Pass the
    true clustering in a simulation; in practice, draw records of the prediction's
    population to review and build the sample with :func:`benchmark_sample`.
    """
    n, replace, seed = _check_draw(n, replace, seed)
    clustering = validate_membership(clustering)
    rng = np.random.default_rng(seed)
    N = len(clustering)
    if not replace and n > N:
        raise ValueError(f"cannot draw n={n} records without replacement from {N}")
    rows = rng.choice(N, size=n, replace=replace)
    clusters = pd.Series(clustering.to_numpy()[rows])
    counts = clusters.value_counts(sort=False)
    units = pd.Index(counts.index)
    reference = clustering[clustering.isin(units)]
    sizes = reference.value_counts(sort=False).reindex(units)
    return Sample(
        reference=reference,
        units=units,
        multiplicity=counts.to_numpy(dtype=np.int64),
        probability=sizes.to_numpy(dtype=float),
        design="records",
        weights="cluster_size",
        replace=replace,
        population_size=N,
    )


def sample_clusters(
    clustering: pd.Series,
    n: int,
    *,
    weights: Weights = "uniform",
    replace: bool = True,
    seed=None,
) -> Sample:
    """Sample ``n`` clusters of ``clustering`` with selection probabilities ``weights``.

    ``weights``: "uniform", "cluster_size" (probability proportional to size) or a Series
    of positive selection probabilities up to a constant indexed by cluster id (never
    inverse weights). With replacement repeats are kept as multiplicities. Without
    replacement only uniform probabilities are allowed (``population_size`` = number of
    clusters gives the finite-population correction).
    """
    n, replace, seed = _check_draw(n, replace, seed)
    clustering = validate_membership(clustering)
    sizes = clustering.value_counts(sort=False)
    units, mult, prob, kind = _draw(sizes, weights, n, replace, seed)
    return Sample(
        reference=clustering[clustering.isin(units)],
        units=units,
        multiplicity=mult,
        probability=prob,
        design="clusters",
        weights=kind,
        replace=replace,
        population_size=len(sizes),
    )


def sample_blocks(
    clustering: pd.Series,
    blocks: pd.Series,
    n: int,
    *,
    weights: Weights = "uniform",
    replace: bool = True,
    seed=None,
) -> Sample:
    """Sample ``n`` disjoint blocks (e.g. a blocking key) and review all their records.

    ``blocks`` maps every record of ``clustering`` to a block id; every true cluster must lie
    inside one block (Binette et al. 2023 Lemma 3), otherwise a ValueError names the split clusters.
    ``weights``: "uniform", "cluster_size" (proportional to the block's number of records)
    or a Series of positive selection probabilities up to a constant indexed by block id.
    """
    n, replace, seed = _check_draw(n, replace, seed)
    clustering = validate_membership(clustering)
    blocks = validate_membership(blocks, name="blocks")
    check_blocks(clustering, blocks)
    blocks = blocks.reindex(clustering.index)
    sizes = blocks.value_counts(sort=False)
    units, mult, prob, kind = _draw(sizes, weights, n, replace, seed)
    keep = blocks.isin(units).to_numpy()
    return Sample(
        reference=clustering[keep],
        units=units,
        multiplicity=mult,
        probability=prob,
        design="blocks",
        weights=kind,
        replace=replace,
        population_size=len(sizes),
        blocks=blocks[keep],
    )


def check_blocks(clustering: pd.Series, blocks: pd.Series) -> None:
    """Raise ValueError naming the true clusters that are split across blocks, or the
    records without a block."""
    missing = clustering.index.difference(blocks.index)
    if len(missing):
        raise ValueError(f"{len(missing)} record(s) have no block: {examples(missing)}")
    b = blocks.reindex(clustering.index)
    c_codes, c_labels = pd.factorize(clustering.to_numpy())
    b_codes, _ = pd.factorize(b.to_numpy())
    lo = np.full(len(c_labels), np.iinfo(np.int64).max)
    hi = np.full(len(c_labels), -1)
    np.minimum.at(lo, c_codes, b_codes)
    np.maximum.at(hi, c_codes, b_codes)
    split = lo != hi
    if split.any():
        raise ValueError(
            f"blocks must contain whole true clusters; {int(split.sum())} cluster(s) are split "
            f"across blocks: {examples(pd.Index(c_labels)[split])}"
        )


def benchmark_sample(
    reference: pd.Series,
    *,
    weights: Weights = "cluster_size",
    multiplicity: pd.Series | None = None,
    replace: bool = True,
    population_size: int | None = None,
    design: str = "benchmark",
    blocks: pd.Series | None = None,
) -> Sample:
    """Wrap an existing reviewed benchmark as a :class:`Sample`.

    ``reference`` maps every reviewed record to its true cluster; each cluster is one
    sampled unit (or each block of ``blocks``). ``weights`` are the units' selection
    probabilities up to a constant: "cluster_size" when records were sampled uniformly and
    their clusters recovered (the Binette 2022 PatentsView benchmark), "uniform" when
    clusters were drawn uniformly, or a Series indexed by unit id. ``multiplicity``
    (Series, unit id -> draws) restores repeats of a with-replacement sample (default one
    draw per unit). ``population_size`` (number of units in the frame) is only used with
    ``replace=False``. For samples of predicted clusters see
    :meth:`Sample.reviewed_predicted`.
    """
    replace = check_flag(replace, "replace")
    reference = validate_membership(reference, name="reference")
    if blocks is not None:
        blocks = validate_membership(blocks, name="blocks")
        check_blocks(reference, blocks)
        blocks = blocks.reindex(reference.index)
        sizes = blocks.value_counts(sort=False)
    else:
        sizes = reference.value_counts(sort=False)
    p, kind = selection_probability(sizes, weights)
    units = pd.Index(sizes.index)
    if multiplicity is None:
        mult = np.ones(len(units), dtype=np.int64)
    else:
        missing = units.difference(multiplicity.index)
        if len(missing):
            raise ValueError(
                f"multiplicity is missing for {len(missing)} unit(s): {examples(missing)}"
            )
        mult = check_multiplicity(multiplicity.reindex(units).to_numpy(), units)
    return Sample(
        reference=reference,
        units=units,
        multiplicity=mult,
        probability=p.to_numpy(dtype=float),
        design=design if blocks is None or design != "benchmark" else "blocks",
        weights=kind,
        replace=replace,
        population_size=population_size,
        blocks=blocks,
    )
