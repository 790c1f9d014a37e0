"""The sample-size planner and ``er-eval plan``: the variance formula by hand, the
per-stratum standard deviations against a brute-force computation on a census pilot, the
minimality of the planned size, and the command line."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from er_evaluation.cli import main
from er_evaluation.designs import TAKE_ALL, allocate, size_strata
from er_evaluation.planning import (
    plan_sample_size,
    planned_variance,
    stratum_sd_from_rates,
    stratum_sd_from_sample,
)
from er_evaluation.sampling import benchmark_sample


def test_planned_variance_by_hand():
    F = pd.Series([10, 20], index=["a", "b"])
    sd = pd.Series([1.0, 2.0], index=["a", "b"])
    n = pd.Series([5, 5], index=["a", "b"])
    # (10² (1 - 5/10) 1²/5 + 20² (1 - 5/20) 2²/5) / 30²
    assert planned_variance(F, sd, n) == pytest.approx((10 + 240) / 900)
    assert planned_variance(F, sd, F) == 0.0


def _population(seed=0, n=120):
    rng = np.random.default_rng(seed)
    truth = pd.Series(rng.integers(0, 25, n), index=[f"r{i}" for i in range(n)])
    pred = truth.copy()
    flip = rng.choice(n, n // 6, replace=False)
    pred.iloc[flip] = truth.iloc[rng.integers(0, n, len(flip))].to_numpy()
    return truth, pred


def _brute_force_u(truth: pd.Series, pred: pd.Series) -> pd.Series:
    """Per-record linearised cluster-block precision, (B_i - P A_i)/mean(A), with
    B_i = f(c)/|c|, A_i = (f(c) + out(c)/2)/|c| counted over explicit record pairs."""
    ids = list(truth.index)
    f = dict.fromkeys(truth.unique(), 0)
    out = dict.fromkeys(truth.unique(), 0)
    for i, j in itertools.combinations(ids, 2):
        if pred[i] == pred[j]:
            if truth[i] == truth[j]:
                f[truth[i]] += 1
            else:
                out[truth[i]] += 1
                out[truth[j]] += 1
    size = truth.value_counts()
    B = truth.map(lambda c: f[c] / size[c])
    A = truth.map(lambda c: (f[c] + out[c] / 2) / size[c])
    precision = B.sum() / A.sum()
    return (B - precision * A) / A.mean()


def test_stratum_sd_from_a_census_pilot_is_the_population_sd():
    truth, pred = _population()
    strata = size_strata(pred, (2, 6))
    census = benchmark_sample(truth, weights="cluster_size", multiplicity=truth.value_counts())
    sd = stratum_sd_from_sample(pred, census, strata, "pairwise_precision")
    u = _brute_force_u(truth, pred)
    expected = u.groupby(strata).std(ddof=0)
    assert sd.reindex(expected.index).to_numpy() == pytest.approx(expected.to_numpy(), rel=1e-9)


def test_plan_is_the_smallest_design_reaching_the_target():
    truth, pred = _population(1, n=3000)
    strata = size_strata(pred, (2, 5, 10))
    plan = plan_sample_size(pred, strata, 0.03, error_rate=0.1)
    assert plan.half_width <= 0.03
    F = strata.value_counts(sort=False)
    sd = plan.table.set_index("stratum")["sd"]
    smaller = allocate(F, plan.n_draws - 1, method="neyman", sd=sd)
    assert 1.959963984540054 * planned_variance(F, sd, smaller) ** 0.5 > 0.03
    assert plan.draws.sum() == plan.n_draws
    text = plan.summary()
    assert "Assumptions:" in text and "assumed misattribution rate 0.1" in text


def test_take_all_strata_and_rates_model():
    truth, pred = _population(2, n=2000)
    strata = size_strata(pred, (2, 5), take_all_size=12)
    plan = plan_sample_size(pred, strata, 0.05, error_rate=0.05, take_all=[TAKE_ALL])
    row = plan.table.set_index("stratum").loc[TAKE_ALL]
    assert row["take_all"] and row["draws"] == row["frame_size"]
    sd = stratum_sd_from_rates(pred, strata, 0.0)
    assert (sd == 0).all()  # no errors, no spread
    with pytest.raises(ValueError, match="exactly one of"):
        plan_sample_size(pred, strata, 0.05)
    with pytest.raises(ValueError, match="half_width"):
        plan_sample_size(pred, strata, 1.5, error_rate=0.05)


def test_cli_plan_prints_the_answer_with_its_assumptions(tmp_path, capsys):
    truth, pred = _population(3, n=1500)
    pred_path, ref_path = tmp_path / "pred.csv", tmp_path / "ref.csv"
    pred.rename_axis("id").rename("cluster").to_csv(pred_path)
    pilot = truth[truth.isin(truth.iloc[:200].unique())]
    pilot.rename_axis("id").rename("cluster").to_csv(ref_path)
    assert main(["plan", str(pred_path), "--half-width", "0.05", "--error-rate", "0.05"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Review ") and "Assumptions:" in out and "allocation: neyman" in out
    assert (
        main(
            [
                "plan",
                str(pred_path),
                "--half-width",
                "0.05",
                "--pilot",
                str(ref_path),
                "--bands",
                "2",
                "5",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert captured.out.startswith("stratum,") and "reviewed pilot" in captured.err
    assert main(["plan", str(pred_path), "--half-width", "0.05"]) == 1
    assert "exactly one of --pilot" in capsys.readouterr().err
