from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from er_evaluation import contingency
from er_evaluation.designs import TAKE_ALL
from er_evaluation.estimators import estimate
from er_evaluation.estimators.intervals import mover_bounds, ratio_bounds
from er_evaluation.metrics import pairwise_precision, pairwise_recall
from er_evaluation.recommend import expected_records, recommend_design
from er_evaluation.simulation import merge_entities, misattribute, zipf_clustering


@pytest.fixture(scope="module")
def heavy():
    truth = zipf_clustering(20_000, 1.8, max_size=1_500, seed=4)
    return truth, merge_entities(truth, 0.1, seed=2)


def _quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **k)


def test_expected_records_matches_simulation():
    sizes = np.array([1] * 50 + [5] * 10 + [100])
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(len(sizes)), sizes)
    reach = [sizes[np.unique(labels[rng.integers(0, len(labels), 20)])].sum() for _ in range(4000)]
    assert expected_records(sizes, 20) == pytest.approx(np.mean(reach), rel=0.02)
    assert expected_records(sizes, 0) == 0.0


def test_take_all_are_the_largest_clusters_and_the_budget_is_spent():
    truth = zipf_clustering(20_000, 2.2, max_size=500, seed=4)
    pred = misattribute(truth, 0.1, seed=2)
    d = recommend_design(pred, records=6_000)
    sizes = pred.value_counts()
    ta = sizes[d.take_all]
    rest = sizes[d.strata.index.difference(d.take_all)]
    assert len(ta) > 0 and ta.min() >= rest.max()  # certainty units are the largest
    assert set(d.strata.index) == set(sizes.index[sizes >= 2])  # singletons carry no link
    sampled = d.draws.drop(TAKE_ALL)
    F = d.frame_sizes.drop(TAKE_ALL)
    assert (sampled >= np.minimum(10, F)).all() and (sampled <= F).all()
    assert d.expected_records["take-all"] == ta.sum()
    # about half the budget for recall, the rest for precision (minimum draws may add)
    assert d.expected_records["recall"] == pytest.approx(3_000, rel=0.25)  # whole draws
    assert 0.8 * 6_000 <= d.total_expected_records <= 1.5 * 6_000
    assert "Review these" in d.summary() and f"{len(ta):,} predicted clusters whole" in d.summary()


def test_a_heavy_tail_on_a_small_budget_says_the_safe_design_costs_more(heavy):
    truth, pred = heavy
    d = recommend_design(pred, records=3_000)
    assert d.total_expected_records > 1.1 * 3_000
    assert "more than the budget of 3,000 records" in d.summary()
    # the giant predicted clusters are reviewed whole, whatever the budget
    assert pred.value_counts().index[0] in d.take_all


def test_a_budget_over_the_population_reviews_every_cluster_exactly(heavy):
    truth, pred = heavy
    d = recommend_design(pred, records=10 * len(pred), recall_share=0.0)
    assert (d.strata == TAKE_ALL).all() and d.record_draws == 0
    draw = d.draw(seed=1)
    e = _quiet(estimate, pred, d.precision_sample(draw, truth), "pairwise_precision")
    exact = pairwise_precision(contingency(pred, truth))
    assert e.value == pytest.approx(exact) and e.ci_low == e.ci_high == pytest.approx(exact)


def test_draw_gives_the_planned_sample_and_estimates(heavy):
    truth, pred = heavy
    d = recommend_design(pred, records=6_000)
    draw = d.draw(seed=7)
    counts = draw.clusters.value_counts().reindex(d.draws.index)
    assert (counts == d.draws).all()
    assert len(draw.records) == d.record_draws
    ps, rs = d.precision_sample(draw, truth), d.recall_sample(draw, truth)
    ep = _quiet(estimate, pred, ps, "pairwise_precision")
    er = _quiet(estimate, pred, rs, "pairwise_recall")
    ct = contingency(pred, truth)
    assert abs(ep.value - pairwise_precision(ct)) < 0.05
    assert abs(er.value - pairwise_recall(ct)) < 0.05
    assert ep.ci_low <= ep.value <= ep.ci_high and er.ci_low <= er.value <= er.ci_high
    # the same seed draws the same design
    again = d.draw(seed=7)
    assert again.clusters.sort_index().equals(draw.clusters.sort_index())


def test_separate_interval_is_mover_of_the_strata_score_intervals(heavy):
    # the package's interval of the recommended precision, recomputed by hand from the
    # draws of each stratum: per-stratum ratio_bounds, take-all exact, MOVER
    truth, pred = heavy
    d = recommend_design(pred, records=6_000)
    draw = d.draw(seed=3)
    e = _quiet(estimate, pred, d.precision_sample(draw, truth), "pairwise_precision")
    codes_t = pd.factorize(truth.to_numpy())[0]
    t_of = {}
    for cid, group in pred.groupby(pred.to_numpy()).groups.items():
        n = np.bincount(codes_t[truth.index.get_indexer(group)])
        t_of[cid] = float((n * (n - 1) / 2).sum())
    sizes = pred.value_counts()
    P = float((sizes * (sizes - 1) / 2).sum())
    c0, vals, los, his, ws = 0.0, [], [], [], []
    for h, ids in draw.clusters.groupby(draw.clusters.to_numpy()).groups.items():
        members = d.strata.index[(d.strata == h).to_numpy()]
        L_all = (sizes[members] * (sizes[members] - 1) / 2).sum()
        t = np.array([t_of[i] for i in ids])
        L = (sizes[ids] * (sizes[ids] - 1) / 2).to_numpy(dtype=float)
        k, F = len(ids), len(members)
        if k == F:
            c0 += t.sum() / P
            continue
        mean = np.array([t.mean(), L.mean()])
        cov = np.cov(np.stack([t, L]), ddof=1)
        theta = 1 - k / F
        r = mean[0] / mean[1]
        v = r * (1 + theta / k * (cov[1, 1] / mean[1] ** 2 - cov[0, 1] / (mean[0] * mean[1])))
        lo, hi = ratio_bounds(
            v, mean, cov, theta, k, (np.array([1.0, 0]), np.array([0, 1.0])), 0.95
        )
        vals.append(min(max(v, 0), 1))
        los.append(float(lo))
        his.append(float(hi))
        ws.append(L_all / P)
    lo, hi = mover_bounds(vals, los, his, ws)
    assert e.value == pytest.approx(c0 + np.dot(ws, vals), rel=1e-9)
    assert (e.ci_low, e.ci_high) == pytest.approx((c0 + lo, c0 + hi), rel=1e-9)


def test_with_a_benchmark_the_whole_budget_goes_to_precision(heavy):
    truth, pred = heavy
    from er_evaluation.sampling import sample_records

    bench = sample_records(truth, 100, seed=1)
    d = recommend_design(pred, records=4_000, benchmark=bench)
    assert d.record_draws == 0 and d.expected_records["recall"] == 0
    assert "existing benchmark" in d.summary()
    assert d.total_expected_records >= 0.8 * 4_000


def test_bad_arguments_are_named(heavy):
    truth, pred = heavy
    with pytest.raises(ValueError, match="records"):
        recommend_design(pred, records=0)
    with pytest.raises(ValueError, match="recall_share"):
        recommend_design(pred, records=100, recall_share=1.0)
    with pytest.raises(ValueError, match="recall_share"):
        recommend_design(pred, records=100, recall_share=-0.1)
    with pytest.raises(ValueError, match="min_draws"):
        recommend_design(pred, records=100, min_draws=1)
    with pytest.raises(ValueError, match="no predicted link"):
        recommend_design(pd.Series(np.arange(10)), records=5)
    from er_evaluation.sampling import sample_clusters

    with pytest.raises(ValueError, match="uniform record benchmark"):
        recommend_design(pred, records=100, benchmark=sample_clusters(truth, 5, seed=0))


def test_misattribution_design_is_reproducible():
    truth = zipf_clustering(5_000, 2.0, max_size=300, seed=1)
    pred = misattribute(truth, 0.1, seed=1)
    a = recommend_design(pred, records=1_500)
    b = recommend_design(pred, records=1_500)
    assert a.strata.equals(b.strata) and a.draws.equals(b.draws)


def test_fscore_and_difference_of_independent_estimates_by_hand():
    import math

    from er_evaluation.estimators import Estimate
    from er_evaluation.estimators.combined import difference_estimate, fscore_estimate
    from er_evaluation.estimators.intervals import fscore_bounds

    def est(metric, v, se, lo, hi, name="A"):
        return Estimate(metric, "x", "d", v, se, lo, hi, 0.95, "score", 10, 10, 100, v, name)

    p = est("pairwise_precision", 0.8, 0.05, 0.7, 0.88)
    r = est("pairwise_recall", 0.9, 0.02, 0.85, 0.94)
    f = fscore_estimate(p, r)
    assert f.value == pytest.approx(2 * 0.8 * 0.9 / 1.7)
    dp, dr = 2 * 0.9**2 / 1.7**2, 2 * 0.8**2 / 1.7**2
    assert f.std_error == pytest.approx(math.hypot(dp * 0.05, dr * 0.02))
    assert (f.ci_low, f.ci_high) == pytest.approx(
        tuple(float(x) for x in fscore_bounds(0.8, 0.7, 0.88, 0.9, 0.85, 0.94, 1.0, 0.0))
    )
    assert f.metric == "pairwise_f1" and f.n_records == 200
    d = difference_estimate(est("pairwise_precision", 0.8, 0.05, 0.7, 0.88, "B"), p)
    assert d.value == 0.0 and d.std_error == pytest.approx(math.sqrt(2) * 0.05)
    assert (d.ci_low, d.ci_high) == pytest.approx((-math.hypot(0.1, 0.08), math.hypot(0.08, 0.1)))
    with pytest.raises(ValueError, match="different predictions"):
        fscore_estimate(p, est("pairwise_recall", 0.9, 0.02, 0.85, 0.94, "B"))
    with pytest.raises(ValueError, match="one metric"):
        difference_estimate(p, r)


def test_estimate_and_compare_a_reviewed_recommended_design(heavy):
    from er_evaluation.recommend import compare_design, estimate_design

    truth, a = heavy
    b = merge_entities(truth, 0.1, seed=2, keep=0.5)
    da, db = recommend_design(a, records=8_000), recommend_design(b, records=8_000)
    draw_a, draw_b = da.draw(seed=1), db.draw(seed=2)
    recall = da.recall_sample(draw_a, truth)
    t = _quiet(estimate_design, a, da.precision_sample(draw_a, truth), recall, name="A")
    assert list(t["metric"]) == ["pairwise_precision", "pairwise_recall", "pairwise_f1"]
    p, r, f = (t.iloc[i] for i in range(3))

    def F(x, y):
        return 2 * x * y / (x + y)

    assert F(p.ci_low, r.ci_low) - 1e-12 <= f.ci_low <= f.value <= f.ci_high
    assert f.ci_high <= F(p.ci_high, r.ci_high) + 1e-12
    ct = contingency(a, truth)
    assert abs(p.value - pairwise_precision(ct)) < 0.05
    samples = {"A": da.precision_sample(draw_a, truth), "B": db.precision_sample(draw_b, truth)}
    d = _quiet(compare_design, {"B": b, "A": a}, samples, recall, baseline="A")
    assert list(d["metric"]) == [
        "pairwise_precision difference",
        "pairwise_recall difference",
        "pairwise_f1 difference",
    ]
    assert (d["ci_low"] <= d["value"]).all() and (d["value"] <= d["ci_high"]).all()
    exact = pairwise_precision(contingency(b, truth)) - pairwise_precision(ct)
    assert abs(d.iloc[0]["value"] - exact) < 0.05
