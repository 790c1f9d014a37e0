"""The recommended design: what to review so that precision, recall and F1 come with honest
intervals, also when a few giant predicted clusters carry most predicted links.

Precision and recall need different reviews (Binette et al. 2023, §2.3 and Remark 2):

- **Precision** is a ratio over *predicted* clusters, ``P = Σ_ĉ t(ĉ) / Σ_ĉ C(|ĉ|, 2)`` with
  ``t(ĉ) = Σ_c C(|c ∩ ĉ|, 2)`` the true links inside ĉ. Reviewing a predicted cluster whole
  (splitting its records by true entity) gives ``t(ĉ)`` exactly, and its link count is known
  from the prediction. So the largest predicted clusters, which carry most links and reveal
  over-merging directly, are reviewed whole (a *take-all* stratum: exact, no variance);
  the other predicted clusters of at least two records are drawn without replacement
  within bands of predicted size, and precision is the separate ratio estimator over the
  strata with their known link totals (Cochran 1977, §6.10: ``P̂ = Σ_h (L_h/|P|) R̂_h``,
  ``R̂_h`` the stratum's ratio of true to predicted links, bias-corrected as Binette et
  al. 2023 eq. 8 within the stratum). Predicted singletons carry no link and are never
  drawn.
- **Recall** needs true clusters: records drawn uniformly at random, the true cluster of
  each reviewed whole (the record recall of Binette et al. 2023, eq. 12) — or an existing
  uniform benchmark (e.g. PatentsView's), which then needs no new draw.
- **F1** is the F-measure of the two, its interval from theirs
  (:func:`~er_evaluation.estimators.intervals.fscore_bounds`).

Allocation for a budget of records to read. Each predicted cluster ĉ of ``s`` records costs
``s`` records and its precision's contribution varies in proportion to its links
``L = C(s, 2)`` (nothing else is known before any review), so Neyman's allocation with
cost (Cochran 1977, §5.5) draws it with expected frequency ``λ L/√s``; a cluster with
``λ L/√s >= 1`` is a *certainty unit* and is taken whole, ``λ`` set so that the expected
records read fill the precision budget (iterated until no new certainty unit appears).
The rest is stratified in bands of predicted size with ratio 4 (2-3, 4-15, 16-63, ...) and
allocated by Neyman with cost, ``n_h ∝ F_h S_h / √c_h`` with ``S_h`` the root mean square
of the links and ``c_h`` the mean size in the band, at least :data:`MIN_STRATUM_DRAWS`
draws per band (or the whole band): the interval of each stratum needs a few draws, and
small clusters cost little. The recall part draws the number of records whose true
clusters are expected to hold the recall budget, with the predicted sizes standing for the
true ones: ``Σ_ĉ |ĉ| (1 - (1 - |ĉ|/N)^m)``.

Walking it: :meth:`RecommendedDesign.draw` draws it, :meth:`RecommendedDesign.drawn` keeps
what estimating the draw needs (:class:`DrawnDesign`: no prediction, so it can be written
beside the records to review, ``er-eval plan --write-sample``), and once the records'
true clusters are reviewed :meth:`DrawnDesign.reviewed` gives both samples
(:class:`DesignSample`), whose :meth:`DesignSample.estimates` is :func:`estimate_design`.
A review project draws the same design into its queue (``er-eval review draw --design
recommended --records N``) and its export carries the drawn design, so every route gives
the same figures.

Measured (``benchmarks/bench_coverage.py``; ``benchmarks/README.md``, "Interval coverage
across regimes"; four truths, three error mechanisms at 5-20%, a budget of twice the
records of n = 50-400 uniform draws, 400 replicates per cell): of the 624 cells whose
estimates vary, 411 cover 93-98%, 21 cover 90.2-92.8% (17 of them recall or recall
differences, whose record draws are those of the uniform design) and 192 cover more than
98% (conservative, mostly F1, precision and their differences on over-merged predictions).
Precision covers at least 92.2% in every cell, where uniform record draws fall to 84.5% on
heavy tails.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from er_evaluation._parameters import check_count, check_proportion
from er_evaluation._take_all import certainty_units
from er_evaluation.clustering import validate_membership
from er_evaluation.designs import TAKE_ALL, allocate, draw_stratified, stratified_sample, with_ratio
from er_evaluation.designs import unit_totals as _unit_totals
from er_evaluation.errors import UnreliableEstimateWarning, examples, warn
from er_evaluation.estimators import compare, estimate, estimates_frame
from er_evaluation.estimators.combined import difference_estimate, fscore_estimate
from er_evaluation.estimators.diagnostics import Diagnostics
from er_evaluation.estimators.results import Estimate
from er_evaluation.sampling import Sample, benchmark_sample

__all__ = [
    "MIN_STRATUM_DRAWS",
    "RECALL_SHARE",
    "DesignDraw",
    "DesignSample",
    "DrawnDesign",
    "RecommendedDesign",
    "compare_design",
    "estimate_design",
    "expected_records",
    "recommend_design",
]

RECALL_SHARE = 0.5
"""Share of the budget of records given to the recall part (record draws)."""

MIN_STRATUM_DRAWS = 10
"""Fewest predicted clusters drawn in a sampled band (or the whole band)."""

BAND_RATIO = 4
"""Ratio of the predicted-size bands of the sampled part: 2-3, 4-15, 16-63, ..."""


def expected_records(sizes: np.ndarray, draws: int) -> float:
    """Expected number of distinct records in the clusters reached by ``draws`` records drawn
    uniformly with replacement from clusters of the given ``sizes``:
    ``Σ s (1 - (1 - s/N)^m)`` (N = Σ s)."""
    s = np.asarray(sizes, dtype=float)
    N = s.sum()
    return float(np.sum(s * -np.expm1(draws * np.log1p(-s / N)))) if draws else 0.0


def _draws_for(sizes: np.ndarray, budget: float) -> int:
    """The number (at least 1) of uniform record draws whose clusters are expected to hold
    the number of records closest to ``budget``."""
    lo, hi = 0, 1
    total = float(np.sum(sizes))
    if budget >= total:
        raise ValueError(
            f"a recall budget of {budget:,.0f} records is the whole population "
            f"({total:,.0f}): review every record"
        )
    while expected_records(sizes, hi) < budget:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if expected_records(sizes, mid) < budget else (lo, mid)
    if lo >= 1 and budget - expected_records(sizes, lo) < expected_records(sizes, hi) - budget:
        return lo
    return hi


def _bands(sizes: np.ndarray) -> np.ndarray:
    """Band label of every size >= 2: 2-3, then [4^k, 4^(k+1) - 1] (4-15, 16-63, ...)."""
    k = np.floor(np.log(np.maximum(sizes, 1.0)) / math.log(BAND_RATIO) + 1e-9).astype(int)
    lo = np.where(sizes < BAND_RATIO, 2, BAND_RATIO ** np.maximum(k, 1))
    hi = np.where(sizes < BAND_RATIO, BAND_RATIO - 1, BAND_RATIO ** (np.maximum(k, 1) + 1) - 1)
    return np.array([f"{a}-{b}" for a, b in zip(lo, hi, strict=True)], dtype=object)


@dataclass(frozen=True)
class DesignDraw:
    """What to review for one draw of a :class:`RecommendedDesign`: ``clusters``, the
    predicted clusters to review whole (index: predicted cluster id, value: stratum;
    the take-all ones included), and ``records``, the record ids drawn uniformly with
    replacement whose true clusters are reviewed whole (for recall; repeats kept)."""

    clusters: pd.Series
    records: pd.Index


@dataclass(frozen=True, eq=False)
class RecommendedDesign:
    """A recommended design (module docstring) for one prediction.

    ``strata``: the stratum of every predicted cluster of at least two records (index:
    predicted cluster id; :data:`~er_evaluation.designs.TAKE_ALL` for those reviewed
    whole, a size band otherwise); ``draws``: predicted clusters to draw per stratum (a
    take-all stratum: all of it); ``record_draws``: records to draw for recall (0 when an
    existing benchmark gives recall); ``expected_records``: records a reviewer is
    expected to read per part ("take-all", "sampled clusters", "recall"); ``n_records``
    and ``predicted_links``: N and |P| of the prediction; ``take_all_link_share``: the
    share of |P| reviewed whole."""

    prediction: pd.Series
    strata: pd.Series
    draws: pd.Series
    record_draws: int
    expected_records: dict
    n_records: int
    predicted_links: int
    take_all_link_share: float
    budget: int

    @property
    def take_all(self) -> pd.Index:
        """Predicted cluster ids reviewed whole."""
        return self.strata.index[(self.strata == TAKE_ALL).to_numpy()]

    @property
    def frame_sizes(self) -> pd.Series:
        """Predicted clusters per stratum (F_h)."""
        return self.strata.value_counts(sort=False).reindex(self.draws.index)

    @property
    def total_expected_records(self) -> float:
        return float(sum(self.expected_records.values()))

    def summary(self) -> str:
        """What to review, with its cost in records to read."""
        ta = self.take_all
        ta_records = int(self.expected_records["take-all"])
        sampled = self.draws.drop(TAKE_ALL, errors="ignore")
        lines = [
            f"Review these {len(ta):,} predicted clusters whole: {ta_records:,} records "
            f"({self.take_all_link_share:.1%} of the {self.predicted_links:,} predicted "
            f"links; exact, no sampling error).",
            f"Draw {int(sampled.sum()):,} more predicted clusters in {len(sampled)} bands of "
            f"predicted size and review each whole: about "
            f"{self.expected_records['sampled clusters']:,.0f} records.",
        ]
        if self.record_draws:
            lines.append(
                f"For recall, draw {self.record_draws:,} records uniformly at random and "
                f"review the true cluster of each: about "
                f"{self.expected_records['recall']:,.0f} records."
            )
        else:
            lines.append("Recall comes from the existing benchmark (no new record draw).")
        lines.append(f"Expected records to read in all: {self.total_expected_records:,.0f}.")
        if self.total_expected_records > 1.1 * self.budget:
            lines.append(
                f"This is more than the budget of {self.budget:,} records: the largest "
                f"predicted clusters, and at least {MIN_STRATUM_DRAWS} clusters per band, are "
                f"what an interval that holds on heavy-tailed clusters needs."
            )
        return "\n".join(lines) + "\n\n" + self.table().to_string()

    def table(self) -> pd.DataFrame:
        """Per stratum (index): ``predicted_clusters`` (F_h), ``to_review`` (the draws; a
        take-all stratum: all of it) and ``expected_records`` (the records of a take-all
        stratum; a band's draws times its mean predicted size); then a row "recall" with
        the records to draw and the records their true clusters are expected to hold."""
        sizes = self.prediction.value_counts(sort=False).reindex(self.strata.index)
        mean_size = sizes.groupby(self.strata.to_numpy()).mean().reindex(self.draws.index)
        table = pd.DataFrame(
            {
                "predicted_clusters": self.frame_sizes,
                "to_review": self.draws,
                "expected_records": self.draws * mean_size,
            }
        )
        if self.record_draws:
            table.loc["recall"] = [np.nan, self.record_draws, self.expected_records["recall"]]
        return table.rename_axis("stratum")

    def review_table(self, draw: DesignDraw, benchmark: pd.Series | None = None) -> pd.DataFrame:
        """The records to review for ``draw``, one row per record (index: record id):
        ``true_cluster`` (empty: the reviewer fills in the record's true entity),
        ``part`` "precision" (a record of a drawn predicted cluster: review the cluster
        whole, splitting its records by true entity), "recall" (a drawn record: find its
        true cluster, and add a row for each of its records not listed) or "both",
        ``predicted_cluster``, ``stratum`` (the band or take-all stratum of its predicted
        cluster; "recall" for a record drawn for recall only) and ``draws`` (times the
        record was drawn for recall; 0 for a precision record only). ``benchmark``: the
        true clusters of the existing benchmark that gives recall, listed too (part
        "benchmark", their ``true_cluster`` given) so that the filled-in table holds every
        reviewed true cluster the estimates use."""
        cluster_of = self.prediction
        drawn = cluster_of[cluster_of.isin(draw.clusters.index)]
        counts = pd.Series(1, index=draw.records).groupby(level=0, sort=False).sum()
        ids = drawn.index.append(counts.index.difference(drawn.index, sort=False))
        stratum = pd.Series(
            draw.clusters.reindex(drawn.to_numpy()).to_numpy(), index=drawn.index, dtype=object
        ).reindex(ids)
        draws = counts.reindex(ids, fill_value=0).astype(np.int64)
        in_precision = ids.isin(drawn.index)
        part = np.where(in_precision, np.where(draws > 0, "both", "precision"), "recall")
        table = pd.DataFrame(
            {
                "true_cluster": pd.Series([None] * len(ids), index=ids, dtype=object),
                "part": part,
                "predicted_cluster": cluster_of.reindex(ids).to_numpy(),
                "stratum": stratum.fillna("recall").to_numpy(),
                "draws": draws.to_numpy(),
            },
            index=ids,
        )
        if benchmark is not None:
            known = benchmark[benchmark.index.isin(ids)]
            table.loc[known.index, "true_cluster"] = known.to_numpy()
            rest = benchmark[~benchmark.index.isin(ids)]
            table = pd.concat(
                [
                    table,
                    pd.DataFrame(
                        {
                            "true_cluster": rest.to_numpy(),
                            "part": "benchmark",
                            "predicted_cluster": cluster_of.reindex(rest.index).to_numpy(),
                            "stratum": "benchmark",
                            "draws": 0,
                        },
                        index=rest.index,
                    ),
                ]
            )
        return table.rename_axis("record_id")

    def draw(self, seed=None) -> DesignDraw:
        """Draw the predicted clusters (without replacement within each band, the take-all
        stratum entirely) and the records for recall (uniformly, with replacement)."""
        rng = np.random.default_rng(seed)
        clusters = draw_stratified(self.strata, self.draws, seed=rng)
        pos = rng.integers(0, self.n_records, size=self.record_draws)
        return DesignDraw(clusters=clusters, records=self.prediction.index[pos])

    def drawn(self, draw: DesignDraw, *, benchmark: pd.Series | None = None) -> DrawnDesign:
        """What estimating ``draw`` needs, once reviewed (:class:`DrawnDesign`): the drawn
        predicted clusters with their records and strata, the strata's frame sizes and
        link totals, the records drawn for recall. ``benchmark``: the true clusters of an
        existing uniform record benchmark that gives recall instead of ``draw.records``."""
        frame = self.prediction[self.prediction.isin(self.strata.index)]
        totals = _unit_totals(self.strata, frame).reindex(self.frame_sizes.index)
        return DrawnDesign(
            clusters=draw.clusters,
            members=frame[frame.isin(draw.clusters.index)],
            frame_sizes=self.frame_sizes,
            unit_totals=totals,
            records=draw.records,
            n_records=self.n_records,
            predicted_links=self.predicted_links,
            benchmark=None if benchmark is None else benchmark.index,
        )

    def precision_sample(self, draw: DesignDraw, truth: pd.Series) -> Sample:
        """The reviewed sample of predicted clusters of ``draw``: ``truth`` gives the
        reviewed true entity of every record of every drawn predicted cluster
        (:meth:`DrawnDesign.precision_sample`)."""
        return self.drawn(draw).precision_sample(truth)

    def recall_sample(self, draw: DesignDraw, truth: pd.Series) -> Sample:
        """The reviewed sample of true clusters reached by the drawn records
        (:meth:`DrawnDesign.recall_sample`)."""
        return self.drawn(draw).recall_sample(truth)


@dataclass(frozen=True, eq=False)
class DesignSample:
    """The two reviewed samples of a recommended design: ``precision``, predicted clusters
    reviewed whole (stratified, separate ratio estimator), and ``recall``, the true
    clusters of records drawn uniformly (or an existing uniform record benchmark);
    ``drawn``: the draw they come from (:class:`DrawnDesign`, restricted to the reviewed
    units). :meth:`estimates` gives :func:`estimate_design`'s table."""

    precision: Sample
    recall: Sample
    drawn: DrawnDesign

    @property
    def reference(self) -> pd.Series:
        """The reviewed true cluster of every record of both samples."""
        both = pd.concat([self.precision.reference, self.recall.reference])
        return both[~both.index.duplicated()]

    @property
    def n_records(self) -> int:
        """Reviewed records of both samples (a record in both counts once)."""
        return len(self.reference)

    @property
    def n_units(self) -> int:
        """Reviewed predicted clusters plus reviewed true clusters of the recall part."""
        return self.precision.n_units + self.recall.n_units

    def check_prediction(self, prediction: pd.Series, name: str = "the prediction") -> None:
        """A ValueError unless ``prediction`` can be the one the design was drawn from: the
        same number of records and predicted links, and the reviewed predicted clusters
        holding the same records."""
        sizes = prediction.value_counts(sort=False).to_numpy(dtype=float)
        links = int(np.sum(sizes * (sizes - 1) / 2))
        drawn = self.drawn
        if len(prediction) != drawn.n_records or links != drawn.predicted_links:
            raise ValueError(
                f"{name} has {len(prediction):,} records and {links:,} predicted links, but the "
                f"design was drawn from a prediction of {drawn.n_records:,} records "
                f"and {drawn.predicted_links:,} links: pass the prediction it was drawn from"
            )
        members = self.precision.reference.index
        missing = members.difference(prediction.index)
        if len(missing):
            raise ValueError(
                f"{name} lacks {len(missing)} record(s) of the reviewed predicted clusters: "
                f"{examples(missing)}"
            )
        held = prediction.reindex(members)
        counts = held.groupby(held.to_numpy()).size()
        whole = prediction[prediction.isin(counts.index)].value_counts(sort=False)
        if len(counts) != self.precision.n_units or not whole.reindex(counts.index).equals(counts):
            raise ValueError(
                f"the reviewed predicted clusters are not clusters of {name}: pass the "
                "prediction the design was drawn from"
            )

    def estimates(
        self, prediction: pd.Series, *, name: str | None = None, level: float = 0.95
    ) -> pd.DataFrame:
        """:func:`estimate_design` of ``prediction`` (checked to be the one the design was
        drawn from: :meth:`check_prediction`) on the two samples."""
        self.check_prediction(prediction, name or "the prediction")
        return estimate_design(
            prediction, self.precision_of(prediction), self.recall, name=name, level=level
        )

    def precision_of(self, prediction: pd.Series) -> Sample:
        """The sample of predicted clusters with the cluster ids of ``prediction`` (a file
        may spell them otherwise than the draw: 7 or "7"); ``prediction`` is the one the
        design was drawn from (:meth:`check_prediction`)."""
        members = self.drawn.members
        label = pd.Series(
            prediction.reindex(members.index).to_numpy(), index=pd.Index(members.to_numpy())
        )
        label = label.groupby(level=0, sort=False).first()
        return dataclasses.replace(
            self.precision, units=pd.Index(label.reindex(self.precision.units).to_numpy())
        )


@dataclass(frozen=True, eq=False)
class DrawnDesign:
    """A draw of a :class:`RecommendedDesign` with what estimating it needs once reviewed,
    and nothing else (no prediction): ``clusters``, the drawn predicted clusters (index)
    with their stratum; ``members``, the records of those clusters (index) with their
    predicted cluster id; ``frame_sizes``, the predicted clusters of each stratum (F_h);
    ``unit_totals``, per stratum the records and predicted links of all its clusters
    (columns ``records``, ``pairs``; the separate ratio estimator's known totals);
    ``records``, the record ids drawn uniformly with replacement for recall (repeats
    kept); ``n_records`` and ``predicted_links``, N and |P| of the prediction;
    ``benchmark``, the records of an existing uniform record benchmark that gives recall
    instead (None: the drawn records do)."""

    clusters: pd.Series
    members: pd.Series
    frame_sizes: pd.Series
    unit_totals: pd.DataFrame
    records: pd.Index
    n_records: int
    predicted_links: int
    benchmark: pd.Index | None = None

    def subset(self, clusters: pd.Index, records: pd.Index) -> DrawnDesign:
        """The same design restricted to the drawn ``clusters`` and the draws of
        ``records`` that are finished (the frame sizes and totals stay those of the whole
        design: the finished units are a sample of each stratum)."""
        keep = self.clusters[self.clusters.index.isin(clusters)]
        return dataclasses.replace(
            self,
            clusters=keep,
            members=self.members[self.members.isin(keep.index)],
            records=self.records[self.records.isin(records)],
        )

    @property
    def needed(self) -> pd.Index:
        """The records whose true cluster the estimates need: those of the drawn predicted
        clusters, the records drawn for recall (or the benchmark's)."""
        needed = self.members.index.append(pd.Index(self.records.unique()))
        if self.benchmark is not None:
            needed = needed.append(self.benchmark)
        return needed.unique()

    def precision_sample(self, truth: pd.Series) -> Sample:
        """The reviewed sample of the drawn predicted clusters: ``truth`` gives the reviewed
        true entity of every record of every drawn predicted cluster. Precision is
        estimated from it by duality with the separate ratio estimator
        (``estimate(prediction, sample, "pairwise_precision")``)."""
        waiting = self.frame_sizes.index.difference(pd.Index(pd.unique(self.clusters.to_numpy())))
        if len(waiting):
            raise ValueError(
                f"every stratum of predicted clusters needs a reviewed cluster; none in "
                f"{examples(waiting)}"
            )
        # units in the order of their records (the prediction's order), however the
        # drawn clusters are listed: every route to this sample gives the very same sums
        clusters = self.clusters.reindex(pd.unique(self.members.to_numpy()))
        sample = stratified_sample(
            self.members,
            clusters,
            self.frame_sizes,
            frame="clusters",
            unit_totals=self.unit_totals,
        )
        return with_ratio(sample.reviewed_predicted(truth), "separate")

    def recall_sample(self, truth: pd.Series) -> Sample:
        """The reviewed sample of true clusters reached by the drawn records (``truth``
        gives the true cluster of every record of every reached true cluster, whole), or
        the benchmark's true clusters as a uniform record benchmark."""
        truth = validate_membership(truth, name="truth")
        if self.benchmark is not None:
            missing = self.benchmark.difference(truth.index)
            if len(missing):
                raise ValueError(
                    f"{len(missing)} benchmark record(s) have no true cluster: {examples(missing)}"
                )
            return benchmark_sample(truth.reindex(self.benchmark), weights="cluster_size")
        if len(self.records) == 0:
            raise ValueError("no reviewed record draw for recall yet")
        missing = self.records.difference(truth.index)
        if len(missing):
            raise ValueError(
                f"{len(missing)} drawn record(s) have no reviewed true cluster: {examples(missing)}"
            )
        reached = truth.reindex(self.records).to_numpy()
        counts = pd.Series(reached).value_counts(sort=False)
        # units in the order of their first draw, whatever the order of ``truth``: a
        # reference read back from a file gives the very same sums
        first = pd.Index(pd.unique(reached))
        held = truth[truth.isin(counts.index)]
        held = held.iloc[np.argsort(first.get_indexer(held.to_numpy()), kind="stable")]
        return benchmark_sample(
            held,
            weights="cluster_size",
            multiplicity=counts,
            population_size=self.n_records,
            design="records",
        )

    def reviewed(self, truth: pd.Series) -> DesignSample:
        """Both reviewed samples from the reviewed true clusters ``truth``."""
        return DesignSample(
            precision=self.precision_sample(truth),
            recall=self.recall_sample(truth),
            drawn=self,
        )


def recommend_design(
    prediction: pd.Series,
    *,
    records: int,
    recall_share: float = RECALL_SHARE,
    benchmark: Sample | None = None,
    min_draws: int = MIN_STRATUM_DRAWS,
) -> RecommendedDesign:
    """The design to review for ``prediction`` with about ``records`` records to read
    (module docstring): the predicted clusters reviewed whole (take-all), the predicted
    clusters to draw per band of predicted size, and the records to draw for recall.

    ``recall_share``: share of ``records`` for the recall part. ``benchmark``: an existing
    uniform record benchmark (a :class:`~er_evaluation.sampling.Sample` of true clusters
    with ``weights="cluster_size"``, e.g. PatentsView's): recall comes from it and the whole
    budget goes to the precision part (a second wave of review). ``min_draws``: fewest
    predicted clusters drawn per sampled band. Returns a :class:`RecommendedDesign`
    (``.summary()`` says what to review and its cost; ``.draw(seed)`` draws it)."""
    prediction = validate_membership(prediction, name="prediction")
    records = check_count(records, "records")
    if check_proportion(recall_share, "recall_share") == 1.0:
        raise ValueError("recall_share must be below 1: precision needs its part of the budget")
    min_draws = check_count(min_draws, "min_draws (a stratum's variance needs two)", minimum=2)
    if benchmark is not None and (
        benchmark.sample_of != "reference" or benchmark.weights != "cluster_size"
    ):
        raise ValueError(
            "benchmark must be a uniform record benchmark: a sample of true clusters with "
            "weights='cluster_size' (records drawn uniformly, their true clusters reviewed)"
        )
    sizes_all = prediction.value_counts(sort=False)
    frame = sizes_all[sizes_all >= 2]
    if frame.empty:
        raise ValueError("the prediction has no predicted link: precision is undefined")
    N = len(prediction)
    recall_budget = 0.0 if benchmark is not None else recall_share * records
    m = _draws_for(sizes_all.to_numpy(), recall_budget) if recall_budget > 0 else 0
    budget = records - (expected_records(sizes_all.to_numpy(), m) if m else 0.0)
    s = frame.to_numpy(dtype=float)
    links = s * (s - 1) / 2
    take = certainty_units(links, s, budget)
    labels = np.where(take, TAKE_ALL, _bands(s)).astype(object)
    strata = pd.Series(labels, index=frame.index, name="stratum")
    rest = ~take
    draws = {}
    if take.any():
        draws[TAKE_ALL] = int(take.sum())
    if rest.any():
        bands = pd.Series(labels[rest])
        F = bands.value_counts(sort=False)
        L = (
            pd.Series(links[rest])
            .groupby(bands.to_numpy())
            .apply(lambda x: float(np.sqrt(np.mean(x**2))))
        )
        c = pd.Series(s[rest]).groupby(bands.to_numpy()).mean()
        w = F * L.reindex(F.index) / np.sqrt(c.reindex(F.index))
        room = max(budget - s[take].sum(), 0.0)
        n_total = room * w.sum() / float((w * c.reindex(F.index)).sum())
        floor = int(np.minimum(min_draws, F).sum())
        n_total = min(max(int(round(n_total)), floor), int(F.sum()))
        while True:  # a band Neyman fills entirely takes more than its floor: add draws
            try:
                alloc = allocate(F, n_total, method="neyman", sd=L, cost=c, minimum=min_draws)
                break
            except ValueError:
                if n_total >= int(F.sum()):
                    raise
                n_total += 1
        full = alloc.index[(alloc == F.reindex(alloc.index)).to_numpy()]
        # a band drawn entirely (Neyman's share or the minimum reached its size) is
        # reviewed whole: it joins the take-all stratum
        if len(full):
            into = np.isin(labels, list(full)) & rest
            labels[into] = TAKE_ALL
            take = take | into
            alloc = alloc.drop(full)
            draws[TAKE_ALL] = int(take.sum())
        draws.update(alloc.to_dict())
        strata = pd.Series(labels, index=frame.index, name="stratum")
    order = sorted(draws, key=lambda h: -1 if h == TAKE_ALL else int(h.split("-")[0]))
    draws = pd.Series({h: draws[h] for h in order}, name="draws").astype(np.int64)
    mean_size = pd.Series(s).groupby(labels).mean()
    sampled = draws.drop(TAKE_ALL, errors="ignore")
    return RecommendedDesign(
        prediction=prediction,
        strata=strata,
        draws=draws,
        record_draws=int(m),
        expected_records={
            "take-all": float(s[take].sum()),
            "sampled clusters": float((sampled * mean_size.reindex(sampled.index)).sum()),
            "recall": expected_records(sizes_all.to_numpy(), m),
        },
        n_records=N,
        predicted_links=int(links.sum()),
        take_all_link_share=float(links[take].sum() / links.sum()),
        budget=int(records),
    )


def _estimate_of(row: pd.Series) -> Estimate:
    """The :class:`~er_evaluation.estimators.Estimate` of a row of a table of estimates."""
    fields = {f: row[f] for f in Estimate.__dataclass_fields__ if f != "diagnostics"}
    diagnostics = Diagnostics(
        float(row["n_effective"]), float(row["top_share"]), bool(row["reliable"]), row["reason"]
    )
    return Estimate(**fields, diagnostics=diagnostics)


def estimate_design(
    prediction: pd.Series,
    precision: Sample,
    recall: Sample,
    *,
    name: str | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Precision, recall and F1 of ``prediction`` from the two reviewed samples of a
    :class:`RecommendedDesign` (:meth:`RecommendedDesign.precision_sample`: the predicted
    clusters reviewed whole; :meth:`RecommendedDesign.recall_sample`, or an existing
    uniform record benchmark: the records' true clusters). Precision by duality with the
    separate ratio estimator over the strata (Binette et al. 2023, Remark 2; Cochran 1977,
    §6.10), recall with the record estimator (eq. 12), F1 the F-measure of the two,
    independent samples (:func:`~er_evaluation.estimators.combined.fscore_estimate`).
    Returns the table of estimates (one row per metric)."""
    with warnings.catch_warnings():
        # each estimate's own warnings are re-issued below, once, for the table
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        p = estimate(prediction, precision, "pairwise_precision", level=level, name=name)
        r = estimate(prediction, recall, "pairwise_recall", level=level, name=name)
    rows = [p, r, fscore_estimate(p, r)]
    for e in rows:
        if not e.reliable:
            warn(
                f"{e.metric} of {name or 'the prediction'} is not reliable: {e.diagnostics.reason}",
                UnreliableEstimateWarning,
            )
    return estimates_frame(rows)


def compare_design(
    predictions: Mapping[str, pd.Series],
    precision: Mapping[str, Sample],
    recall: Sample,
    *,
    baseline: str | None = None,
    level: float = 0.95,
) -> pd.DataFrame:
    """Differences ``metric(other) - metric(baseline)`` of precision, recall and F1 between
    predictions reviewed with the recommended design: each prediction's own sample of
    predicted clusters (``precision``, by name; independent samples, so the precision
    difference combines their intervals without correlation), one record sample shared by
    all (``recall``: the recall difference is paired, :func:`~er_evaluation.estimators.compare`),
    and the F1 difference from the two F1 estimates with the correlation their paired
    recalls give them. Returns the table of estimates (three rows per difference)."""
    names = [str(k) for k in predictions]
    if len(names) < 2:
        raise ValueError("compare_design needs at least two predictions")
    baseline = names[0] if baseline is None else str(baseline)
    if baseline not in names:
        raise ValueError(f"baseline {baseline!r} is not one of the predictions {names}")
    missing = [n for n in names if n not in precision]
    if missing:
        raise ValueError(f"no sample of predicted clusters for prediction(s) {missing}")
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        single = {
            n: estimate_design(predictions[n], precision[n], recall, name=n, level=level)
            for n in names
        }
        for n in names:
            if n == baseline:
                continue
            a = {
                m: _estimate_of(row)
                for m, row in single[n].set_index("metric", drop=False).iterrows()
            }
            b = {
                m: _estimate_of(row)
                for m, row in single[baseline].set_index("metric", drop=False).iterrows()
            }
            dr = _estimate_of(
                compare(
                    {n: predictions[n], baseline: predictions[baseline]},
                    recall,
                    "pairwise_recall",
                    baseline=baseline,
                    level=level,
                ).iloc[0]
            )
            P, R, F = "pairwise_precision", "pairwise_recall", "pairwise_f1"
            dp = difference_estimate(a[P], b[P])
            # the two F1 correlate through the paired recalls only
            cov_r = (a[R].std_error ** 2 + b[R].std_error ** 2 - dr.std_error**2) / 2
            ga, gb = _recall_slope(a[P].value, a[R].value), _recall_slope(b[P].value, b[R].value)
            sf = a[F].std_error * b[F].std_error
            rho = ga * gb * cov_r / sf if sf > 0 and np.isfinite(cov_r) else 0.0
            df = difference_estimate(a[F], b[F], rho=float(np.clip(rho, -1.0, 1.0)))
            rows += [dp, dr, df]
    return estimates_frame(rows)


def _recall_slope(p: float, r: float) -> float:
    """dF1/dR at (p, r): 2 p² / (p + r)²."""
    return 2 * p * p / (p + r) ** 2 if p + r > 0 else 0.0
