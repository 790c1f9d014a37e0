from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from er_evaluation.estimators import estimate_table
from er_evaluation.plots import plot_estimates, plot_simulation
from er_evaluation.sampling import sample_records
from er_evaluation.simulation import misattribute, run_study


def hand_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "prediction": ["v2", "v1", "v2", "v1"],
            "metric": [
                "pairwise_precision",
                "pairwise_precision",
                "pairwise_recall",
                "pairwise_recall",
            ],
            "value": [0.8, 0.7, 0.9, 0.95],
            "ci_low": [0.75, 0.6, 0.85, 0.94],
            "ci_high": [0.82, 0.8, 0.97, 0.99],
            "level": [0.95] * 4,
            "ci_method": ["normal"] * 4,
        }
    )


def test_plot_estimates_error_bars_are_the_intervals():
    fig = plot_estimates(hand_table())
    assert [t.name for t in fig.data] == ["pairwise_precision", "pairwise_recall"]
    p, r = fig.data
    assert list(p.x) == ["v2", "v1"]
    np.testing.assert_allclose(p.y, [0.8, 0.7])
    np.testing.assert_allclose(p.error_y.array, [0.02, 0.1])
    np.testing.assert_allclose(p.error_y.arrayminus, [0.05, 0.1])
    assert p.error_y.symmetric is False
    np.testing.assert_allclose(r.error_y.array, [0.07, 0.04])
    np.testing.assert_allclose(r.error_y.arrayminus, [0.05, 0.01])
    assert list(fig.layout.xaxis.categoryarray) == ["v2", "v1"]
    assert fig.layout.xaxis.type == "category"
    assert "95% CI, normal" in fig.layout.yaxis.title.text


def test_plot_estimates_selects_metrics_and_checks_input():
    fig = plot_estimates(hand_table(), metrics=["pairwise_recall"])
    assert [t.name for t in fig.data] == ["pairwise_recall"]
    with pytest.raises(ValueError, match="pairwise_f1"):
        plot_estimates(hand_table(), metrics=["pairwise_f1"])
    with pytest.raises(ValueError, match="ci_high"):
        plot_estimates(hand_table().drop(columns="ci_high"))
    with pytest.raises(ValueError, match="no rows"):
        plot_estimates(hand_table().iloc[:0])


def test_plot_estimates_on_estimate_table_output():
    rng = np.random.default_rng(0)
    truth = pd.Series(np.repeat(np.arange(200), rng.integers(1, 8, size=200)))
    truth.index = [f"r{i}" for i in range(len(truth))]
    preds = {"a": misattribute(truth, 0.1, seed=1), "b": misattribute(truth, 0.3, seed=2)}
    sample = sample_records(truth, 60, seed=3)
    table = estimate_table(preds, sample, metrics=("pairwise_precision", "pairwise_recall"))
    fig = plot_estimates(table)
    for trace in fig.data:
        rows = table[table["metric"] == trace.name]
        np.testing.assert_allclose(trace.y, rows["value"])
        np.testing.assert_allclose(np.asarray(trace.y) + trace.error_y.array, rows["ci_high"])
        np.testing.assert_allclose(np.asarray(trace.y) - trace.error_y.arrayminus, rows["ci_low"])


@pytest.fixture(scope="module")
def small_study():
    rng = np.random.default_rng(4)
    truth = pd.Series(np.repeat(np.arange(150), rng.integers(1, 10, size=150)))
    return run_study(
        truth,
        rates=(0.1, 0.2),
        sample_sizes=(30, 60),
        repetitions=8,
        ci_methods=("normal",),
        seed=0,
        progress=False,
    )


def test_plot_simulation_boxes_hold_the_replicates(small_study):
    fig = plot_simulation(small_study, "pairwise_precision")
    names = [t.name for t in fig.data]
    assert names == ["naive", "record", "cluster_block"] * 2
    rep = small_study.replicates
    for trace, rate in zip(fig.data, [0.1] * 3 + [0.2] * 3, strict=True):
        d = rep[
            (rep["rate"] == rate)
            & (rep["metric"] == "pairwise_precision")
            & (rep["estimator"] == trace.name)
        ]
        np.testing.assert_allclose(trace.y, d["value"])
        assert list(trace.x) == d["sample_size"].astype(str).tolist()
    assert [t.showlegend for t in fig.data] == [True] * 3 + [False] * 3
    truth_lines = [s.y0 for s in fig.layout.shapes]
    np.testing.assert_allclose(truth_lines, small_study.truth["pairwise_precision"])


def test_plot_simulation_recall_and_errors(small_study):
    fig = plot_simulation(small_study, "pairwise_recall", estimators=["record"])
    assert [t.name for t in fig.data] == ["record", "record"]
    with pytest.raises(ValueError, match="pairwise_f1"):
        plot_simulation(small_study, "pairwise_f1")
    with pytest.raises(ValueError, match="cluster_block"):
        plot_simulation(small_study, "pairwise_recall", estimators=["cluster_block"])
