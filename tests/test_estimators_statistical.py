"""Monte-Carlo checks (fixed seeds, a few seconds): the recommended estimators are
unbiased within their Monte-Carlo error, the naive one is not, and the variance
estimator tracks the sampling variance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from er_evaluation import contingency
from er_evaluation.estimators import estimate_from_units, unit_table
from er_evaluation.sampling import sample_clusters, sample_records


def _population(seed: int = 0, n_clusters: int = 800):
    """Heavy-tailed cluster sizes (Zipf-like, like inventors' mention counts) and a
    prediction with 10% of records misattributed to the cluster of a random record."""
    rng = np.random.default_rng(seed)
    sizes = np.minimum(rng.zipf(1.8, n_clusters), 150)
    truth_values = np.repeat(np.arange(n_clusters), sizes)
    N = len(truth_values)
    truth = pd.Series(truth_values, index=np.arange(N))
    pred_values = truth_values.copy()
    who = rng.choice(N, N // 10, replace=False)
    pred_values[who] = truth_values[rng.choice(N, len(who))]
    pred = pd.Series(pred_values, index=np.arange(N))
    ct = contingency(pred, truth)
    return (
        truth,
        pred,
        ct.true_positive_links / ct.predicted_links,
        ct.true_positive_links / ct.true_links,
    )


def _simulate(sampler, metric_estimators, reps=300, seed=1):
    truth, pred, P, R = _population()
    rng = np.random.default_rng(seed)
    out = {k: [] for k in metric_estimators}
    for _ in range(reps):
        s = sampler(truth, rng)
        ut = unit_table(pred, s, validate=False)
        for metric, est in metric_estimators:
            e = estimate_from_units(ut, metric, estimator=est, ci_method="normal")
            out[(metric, est)].append((e.value, e.std_error))
    return {k: np.array(v) for k, v in out.items()}, {"pairwise_precision": P, "pairwise_recall": R}


def _within_mc_error(values: np.ndarray, truth: float, k: float = 3.0) -> bool:
    mc_se = values.std(ddof=1) / np.sqrt(len(values))
    return abs(values.mean() - truth) <= k * mc_se


@pytest.mark.slow
def test_record_sampling_cluster_block_precision_and_record_recall_unbiased():
    keys = [
        ("pairwise_precision", "cluster_block"),
        ("pairwise_recall", "record"),
        ("pairwise_precision", "naive"),
    ]
    res, true = _simulate(lambda t, rng: sample_records(t, 100, seed=rng), keys)
    p = res[("pairwise_precision", "cluster_block")][:, 0]
    r = res[("pairwise_recall", "record")][:, 0]
    assert _within_mc_error(p, true["pairwise_precision"])
    assert _within_mc_error(r, true["pairwise_recall"])
    naive = res[("pairwise_precision", "naive")][:, 0]
    assert naive.mean() - true["pairwise_precision"] > 0.05  # visibly biased upwards
    assert not _within_mc_error(naive, true["pairwise_precision"], k=10)
    # the delta-method variance tracks the Monte-Carlo variance
    for est, values in (
        (p, res[("pairwise_precision", "cluster_block")]),
        (r, res[("pairwise_recall", "record")]),
    ):
        assert np.mean(values[:, 1] ** 2) == pytest.approx(est.var(ddof=1), rel=0.35)


@pytest.mark.slow
def test_uniform_cluster_sampling_estimators_unbiased():
    keys = [
        ("pairwise_precision", "cluster_block"),
        ("pairwise_recall", "cluster"),
        ("pairwise_precision", "cluster"),
    ]
    res, true = _simulate(lambda t, rng: sample_clusters(t, 150, seed=rng), keys, reps=200)
    assert _within_mc_error(
        res[("pairwise_precision", "cluster_block")][:, 0], true["pairwise_precision"]
    )
    assert _within_mc_error(res[("pairwise_recall", "cluster")][:, 0], true["pairwise_recall"])
    assert _within_mc_error(
        res[("pairwise_precision", "cluster")][:, 0], true["pairwise_precision"]
    )


def test_cluster_level_metric_estimators_unbiased():
    from sklearn.metrics import homogeneity_score

    truth, pred, _, _ = _population()
    keys = [
        ("bcubed_precision", "cluster"),
        ("bcubed_recall", "cluster"),
        ("homogeneity", "cluster"),
    ]
    res, _ = _simulate(lambda t, rng: sample_records(t, 150, seed=rng), keys, reps=200, seed=2)
    sizes_pred = pred.value_counts()
    b3p = (pd.crosstab(truth, pred) ** 2 / sizes_pred).to_numpy().sum() / len(truth)
    sizes_true = truth.value_counts()
    b3r = (pd.crosstab(truth, pred) ** 2).div(sizes_true, axis=0).to_numpy().sum() / len(truth)
    exact = {
        "bcubed_precision": b3p,
        "bcubed_recall": b3r,
        "homogeneity": homogeneity_score(truth, pred),
    }
    for metric, est in keys:
        assert _within_mc_error(res[(metric, est)][:, 0], exact[metric]), metric
