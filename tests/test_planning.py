"""The sample-size planner and ``er-eval plan``: the variance formula by hand, the
per-stratum standard deviations against a brute-force computation on a census pilot, the
minimality of the planned size, and the command line."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtri

from er_evaluation.cli import main
from er_evaluation.designs import (
    SIZE_BANDS,
    TAKE_ALL,
    allocate,
    record_strata,
    sample_stratified_clusters,
    size_strata,
)
from er_evaluation.planning import (
    HEAVY_TAIL_EFFECTIVE_CLUSTERS,
    MIN_PLANNED_DRAWS,
    MODEL_CONFIDENCE,
    PILOT_CONFIDENCE,
    PlanWarning,
    default_design,
    link_effective_clusters,
    model_precision,
    plan_review,
    plan_sample_size,
    planned_variance,
    rate_for_precision,
    rate_for_recall,
    stratum_sd_from_cluster_rates,
    stratum_sd_from_clusters,
    stratum_sd_from_rates,
    stratum_sd_from_sample,
    true_size_counts,
)
from er_evaluation.planning._frames import DesignFrame
from er_evaluation.planning._sample_size import _smallest_allocation
from er_evaluation.sampling import benchmark_sample, sample_records
from er_evaluation.simulation import misattribute, zipf_clustering


def test_planned_variance_by_hand():
    F = pd.Series([10, 20], index=["a", "b"])
    sd = pd.Series([1.0, 2.0], index=["a", "b"])
    n = pd.Series([5, 5], index=["a", "b"])
    # (10² (1 - 5/10) 1²/5 + 20² (1 - 5/20) 2²/5) / 30²
    assert planned_variance(F, sd, n) == pytest.approx((10 + 240) / 900)
    assert planned_variance(F, sd, F) == 0.0  # take-all strata add nothing
    # frame units are predicted clusters: N is the records of the prediction
    assert planned_variance(F, sd, n, population=60) == pytest.approx((10 + 240) / 3600)


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


@pytest.mark.filterwarnings("ignore::er_evaluation.errors.PopulationWarning")
def test_stratum_sd_from_a_census_pilot_is_the_population_sd():
    truth, pred = _population()
    strata = size_strata(pred, (2, 6))
    census = benchmark_sample(truth, weights="cluster_size", multiplicity=truth.value_counts())
    sd = stratum_sd_from_sample(pred, census, strata, "pairwise_precision")
    u = _brute_force_u(truth, pred)
    # S_h²: divisor F_h - 1; a stratum of one record has no spread
    expected = u.groupby(strata).std(ddof=1).fillna(0.0)
    assert sd.reindex(expected.index).to_numpy() == pytest.approx(expected.to_numpy(), rel=1e-9)


def test_plan_is_the_smallest_design_reaching_the_target():
    truth, pred = _population(1, n=3000)
    strata = size_strata(pred, (2, 5, 10))
    plan = plan_sample_size(pred, strata, 0.01, metric="pairwise_recall", error_rate=0.1)
    assert plan.design == "records" and plan.half_width <= 0.01
    assert plan.n_draws > MIN_PLANNED_DRAWS  # set by the variance, not by the floor
    F = strata.value_counts(sort=False)
    sd = plan.table.set_index("stratum")["sd"]
    smaller = allocate(F, plan.n_draws - 1, method="neyman", sd=sd)
    assert 1.959963984540054 * planned_variance(F, sd, smaller) ** 0.5 > 0.01
    assert plan.draws.sum() == plan.n_draws
    text = plan.summary()
    assert "Assumptions:" in text and "assumed misattribution rate 0.1" in text


def test_take_all_strata_and_rates_model():
    truth, pred = _population(2, n=2000)
    strata = size_strata(pred, (2, 5), take_all_size=12)
    plan = plan_sample_size(pred, strata, 0.05, error_rate=0.05, take_all=[TAKE_ALL])
    row = plan.table.set_index("stratum").loc[TAKE_ALL]
    assert row["take_all"] and row["draws"] == row["frame_size"]
    for metric in ("pairwise_precision", "pairwise_recall", "pairwise_f1"):
        sd = stratum_sd_from_rates(pred, strata, 0.0, metric)
        assert sd.to_numpy() == pytest.approx(0.0, abs=1e-12)  # no errors, no spread
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
    # the planner runs in memory: plan offers no --engine (it failed on an engine table)
    with pytest.raises(SystemExit):
        main(["plan", str(pred_path), "--half-width", "0.05", "--engine", "duckdb"])
    assert "unrecognized arguments: --engine duckdb" in capsys.readouterr().err


# --- the designs that work: predicted clusters for precision, records for recall / F1 ---


def _tiny_clusters():
    """Eight predicted clusters (sizes 1, 2, 2, 3, 3, 4, 4, 6) of 25 records, a truth
    splitting some of them, and strata: small (sizes 1-2), mid (3-4), big (6)."""
    pred_sizes = [1, 2, 2, 3, 3, 4, 4, 6]
    # true cluster of each record, cluster by cluster (labels local to the cluster, plus
    # one true cluster "x" spanning clusters 3 and 5)
    truth_parts = [
        ["a"],
        ["b", "b"],
        ["c", "d"],
        ["e", "e", "x"],
        ["f", "f", "f"],
        ["g", "g", "h", "h"],
        ["x", "x", "x", "i"],
        ["j"] * 4 + ["k", "l"],
    ]
    ids = [f"r{i}" for i in range(sum(pred_sizes))]
    pred = pd.Series(np.repeat([f"p{k}" for k in range(8)], pred_sizes), index=ids)
    truth = pd.Series([t for part in truth_parts for t in part], index=ids)
    strata = size_strata(pred, (3, 6))
    return pred, truth, strata


def _brute_force_cluster_u(pred, truth):
    """u(ĉ) = (B - P A)/Ā per predicted cluster, with B counted over explicit pairs."""
    A, B = {}, {}
    for c, members in pred.groupby(pred).groups.items():
        members = list(members)
        A[c] = len(members) * (len(members) - 1) / 2
        B[c] = sum(truth[i] == truth[j] for i, j in itertools.combinations(members, 2))
    A, B = pd.Series(A), pd.Series(B, dtype=float)
    precision = B.sum() / A.sum()
    return (B - precision * A) / (A.sum() / len(pred))


def test_cluster_design_planned_variance_is_the_exact_design_variance():
    """Exhaustive enumeration of every stratified sample of predicted clusters: the
    variance of the linearised estimator (1/N) Σ_h F_h/n_h Σ u equals the planned
    variance with S_h from a census pilot (stratum_sd_from_clusters)."""
    pred, truth, strata = _tiny_clusters()
    labels = pd.Series(strata.to_numpy(), index=pred.to_numpy()).groupby(level=0).first()
    F = labels.value_counts(sort=False)
    census = sample_stratified_clusters(pred, labels, F).reviewed_predicted(truth)
    sd = stratum_sd_from_clusters(pred, census, labels)
    u = _brute_force_cluster_u(pred, truth)
    assert sd.to_numpy() == pytest.approx(
        u.groupby(labels).std(ddof=1).fillna(0.0).reindex(sd.index).to_numpy(), rel=1e-12
    )
    draws = pd.Series({"1-2": 2, "3-5": 2, "6+": 1})
    members = {h: list(labels.index[labels == h]) for h in F.index}
    totals = []
    for picks in itertools.product(
        *[itertools.combinations(members[h], int(draws[h])) for h in F.index]
    ):
        totals.append(
            sum(F[h] / draws[h] * u[list(p)].sum() for h, p in zip(F.index, picks, strict=True))
            / len(pred)
        )
    exact = float(np.var(totals))  # every sample equally likely
    assert planned_variance(F, sd, draws, len(pred)) == pytest.approx(exact, rel=1e-12)


def test_cluster_plan_by_hand_from_a_census_pilot():
    """Six predicted clusters of 10 records: two true pairs (B = 1), two false pairs
    (B = 0), two singletons. |P| = 4, P = 0.5, Ā = 4/10, so u = ±1.25 on the pairs and 0
    on the singletons: S² = 4 x 1.5625 / 5 = 1.25. V(n) = (1/N²) F² (1 - n/F) S²/n with
    F = 6, N = 10: 1.96 sqrt(V) = 0.7591 (n = 2), 0.5368 (n = 3), 0.3796 (n = 4), so a
    target of 0.4 needs n = 4."""
    pred = pd.Series(list("aabbccddef"), index=range(10))
    truth = pd.Series(["t1", "t1", "t2", "t2", "t3", "t4", "t5", "t6", "t7", "t8"], index=range(10))
    census = benchmark_sample(pred, weights="uniform").reviewed_predicted(truth)
    labels = pd.Series("all", index=list("abcdef"))
    sd = stratum_sd_from_clusters(pred, census, labels)
    assert sd["all"] == pytest.approx(math.sqrt(1.25), rel=1e-12)
    hw = {n: 1.96 * math.sqrt(36 * (1 - n / 6) * 1.25 / n / 100) for n in (2, 3, 4)}
    assert [round(hw[n], 4) for n in (2, 3, 4)] == [0.7591, 0.5368, 0.3796]
    plan = plan_sample_size(pred, None, 0.4, pilot=census, minimum=1, min_draws=1)
    assert plan.design == "predicted_clusters" and plan.n_draws == 4
    assert plan.half_width == pytest.approx(float(ndtri(0.975)) / 1.96 * hw[4], rel=1e-12)
    text = plan.summary()
    assert "Review 4 predicted clusters" in text
    assert "design: predicted clusters drawn without replacement" in text
    assert "from a reviewed pilot of 6 predicted clusters" in text


def test_cluster_rate_model_against_a_simulated_census():
    """The forward misattribution model's S_h (and precision) against the census of an
    actual misattribution (Binette et al. 2023, §2.4) of a truth with clusters of 1-60
    records, stratified by predicted size; and its closed-form precision."""
    rng = np.random.default_rng(11)
    truth = pd.Series(np.repeat(np.arange(3000), rng.zipf(1.8, 3000).clip(max=60)))
    truth.index = [f"r{i}" for i in range(len(truth))]
    pred = misattribute(truth, 0.1, seed=12)
    strata = size_strata(pred, (2, 5, 20))
    labels = pd.Series(strata.to_numpy(), index=pred.to_numpy()).groupby(level=0).first()
    census = benchmark_sample(pred, weights="uniform").reviewed_predicted(truth)
    actual = stratum_sd_from_clusters(pred, census, labels)
    model = stratum_sd_from_cluster_rates(pred, labels, 0.1)
    assert model["1"] == 0.0 and actual["1"] == 0.0  # singletons have no links
    for h in ("2-4", "5-19", "20+"):
        assert model[h] == pytest.approx(actual[h], rel=0.3), h
    from er_evaluation.metrics import pairwise_precision

    assert model_precision(pred, 0.1) == pytest.approx(pairwise_precision(pred, truth), abs=0.05)
    assert model_precision(pred, 0.0) == 1.0
    # deconvolution: a truth of singletons and pairs misattributed at 5%
    pairs = pd.Series(np.repeat(np.arange(9000), [2] * 1000 + [1] * 8000))
    mis = misattribute(pairs, 0.05, seed=3)
    t, n = true_size_counts(mis, 0.05)
    found = dict(zip(t, n, strict=True))
    assert [found[1.0], found[2.0]] == pytest.approx([8000, 1000], rel=0.05)
    assert sum(v for k, v in found.items() if k > 2) < 50  # (the prediction has 100+)
    assert model_precision(mis, 0.05) == pytest.approx(pairwise_precision(mis, pairs), abs=0.02)
    assert rate_for_precision(pred, model_precision(pred, 0.07)) == pytest.approx(0.07, abs=1e-5)
    with pytest.raises(ValueError, match="strata of predicted cluster size only"):
        odd = pd.Series(np.arange(len(labels)) % 2, index=labels.index)
        stratum_sd_from_cluster_rates(pred, odd, 0.1)


def test_variance_spread_by_hand_and_by_enumeration():
    """The relative standard deviation of S² over populations of F independent values,
    sqrt((μ₄ - σ⁴ (F-3)/(F-1)) / F) / σ²: by hand for u = 0 or 1 with probability 1/2 and
    F = 5 (σ² = 1/4, μ₄ = 1/16: Var S² = 1/80 - 1/160 = 1/160, relative SD 4/√160), and
    against the exact distribution of S² over all 3⁴ populations of 4 values of a
    three-point u."""
    from er_evaluation.planning._sources import _variance_spread

    h = np.array(["a", "a"])
    spread = _variance_spread(
        h, np.array([0.5, 0.5]), np.array([0.0, 1.0]), pd.Series({"a": 0.25}), pd.Series({"a": 5})
    )
    assert spread["a"] == pytest.approx(4 / math.sqrt(160), rel=1e-12)

    values, prob = np.array([-1.0, 0.5, 3.0]), np.array([0.2, 0.5, 0.3])
    mean = prob @ values
    var = prob @ (values - mean) ** 2
    s2, p = [], []
    for pick in itertools.product(range(3), repeat=4):
        s2.append(np.var(values[list(pick)], ddof=1))
        p.append(np.prod(prob[list(pick)]))
    s2, p = np.array(s2), np.array(p)
    assert p @ s2 == pytest.approx(var, rel=1e-12)  # S² is unbiased for σ²
    exact = math.sqrt(p @ (s2 - var) ** 2) / var
    spread = _variance_spread(
        np.array(["b"] * 3), prob, values, pd.Series({"b": var}), pd.Series({"b": 4})
    )
    assert spread["b"] == pytest.approx(exact, rel=1e-12)
    # no spread for a stratum of one cluster or one without variance
    none = _variance_spread(
        np.array(["c", "c", "d"]),
        np.array([0.5, 0.5, 1.0]),
        np.array([0.0, 1.0, 2.0]),
        pd.Series({"c": 0.25, "d": 0.0}),
        pd.Series({"c": 1, "d": 9}),
    )
    assert none.tolist() == [0.0, 0.0]


def test_cluster_rate_model_upper_bound_on_s_h():
    """With ``confidence``, S_h² of the misattribution model is raised by z_c times its
    relative spread over populations of F_h clusters: strongly in a band of a few large
    predicted clusters, hardly in a band of thousands; the plan from a rate (and the
    benchmark's rate) rests on it at :data:`MODEL_CONFIDENCE`."""
    rng = np.random.default_rng(11)
    truth = pd.Series(np.repeat(np.arange(3000), rng.zipf(1.8, 3000).clip(max=60)))
    pred = misattribute(truth, 0.1, seed=12)
    strata = size_strata(pred, (2, 5, 20))
    labels = pd.Series(strata.to_numpy(), index=pred.to_numpy()).groupby(level=0).first()
    mean = stratum_sd_from_cluster_rates(pred, labels, 0.1)
    upper = stratum_sd_from_cluster_rates(pred, labels, 0.1, confidence=MODEL_CONFIDENCE)
    higher = stratum_sd_from_cluster_rates(pred, labels, 0.1, confidence=0.95)
    F = labels.value_counts()
    assert upper["1"] == 0.0  # singletons have no links, whatever the confidence
    ratio = (upper / mean).drop("1")
    assert (ratio > 1).all() and (higher.drop("1") > upper.drop("1")).all()
    # the raise shrinks with the clusters in the band: about 1/sqrt(F_h)
    assert ratio["20+"] > ratio["5-19"] > ratio["2-4"]
    assert F["20+"] < F["5-19"] < F["2-4"]
    assert ratio["2-4"] < 1.03 and ratio["20+"] > 1.05
    for bad in (0.5, 1.0, 1.5):
        with pytest.raises(ValueError, match="confidence must be in"):
            stratum_sd_from_cluster_rates(pred, labels, 0.1, confidence=bad)
    plan = plan_sample_size(pred, strata, 0.02, error_rate=0.1)
    sd = plan.table.set_index("stratum")["sd"]
    np.testing.assert_allclose(sd.to_numpy(), upper.reindex(sd.index).to_numpy(), rtol=1e-12)


def test_binomial_pair_variance_against_the_distribution():
    from scipy.stats import binom

    from er_evaluation.planning._models import binomial_pair_variance

    for s in (1, 2, 3, 7, 40):
        k = np.arange(s + 1)
        pmf = binom.pmf(k, s, 0.85)
        x = k * (k - 1.0)
        direct = pmf @ x**2 - (pmf @ x) ** 2
        assert binomial_pair_variance(np.array([s]), 0.85)[0] == pytest.approx(direct, abs=1e-9)


@pytest.mark.filterwarnings("ignore::er_evaluation.errors.PopulationWarning")
def test_recall_rate_model_matches_a_simulated_census():
    """Recall's binomial model against the census standard deviation of a simulated
    misattribution of a clustering with clusters of 1-30 records."""
    rng = np.random.default_rng(4)
    truth = pd.Series(np.repeat(np.arange(400), rng.integers(1, 30, 400)))
    truth.index = [f"r{i}" for i in range(len(truth))]
    pred = misattribute(truth, 0.1, seed=5)
    one = pd.Series("all", index=pred.index)
    census = benchmark_sample(truth, weights="cluster_size", multiplicity=truth.value_counts())
    actual = stratum_sd_from_sample(pred, census, one, "pairwise_recall")["all"]
    model = stratum_sd_from_rates(pred, one, 0.1, "pairwise_recall")["all"]
    assert model == pytest.approx(actual, rel=0.25)


def test_floor_counts_only_the_strata_left_sampled():
    # by hand: F = (5, 100), S = (100, 1), a loose target. At n = 10 the Neyman shares
    # 10 x 500/600 and 10 x 100/600 put 8.3 on "big", more than its 5 units: "big" is
    # reviewed whole and "small" gets 5, short of 10 by 5; at n = 15 "big" keeps 5 and
    # "small" gets 10, the floor.
    F = pd.Series([5, 100], index=["big", "small"])
    frame = DesignFrame(F, pd.Series([100.0, 1.0], index=F.index), F * 0 + 2.0, "", "")
    kwargs = {"method": "neyman", "take_all": [], "minimum": 2, "min_draws": 10}
    draws = _smallest_allocation(frame, 1e9, 210, varies=np.array([True, True]), **kwargs)
    assert draws.to_dict() == {"big": 5, "small": 10}
    # a stratum that cannot err (singletons on the predicted-cluster design) counts nothing:
    # with "big" whole no stratum is left to sample, so n stays at the first floor, 10
    draws = _smallest_allocation(frame, 1e9, 210, varies=np.array([True, False]), **kwargs)
    assert draws.to_dict() == {"big": 5, "small": 5}


def test_heavy_tail_precision_plan_samples_the_floor_outside_whole_strata():
    # Zipf(1.5): the allocation reviews the largest bands whole; the draws left to the
    # sampled bands must still reach the floor (they were 8, two per band, before)
    truth = zipf_clustering(20_000, 1.5, max_size=5_000, seed=0)
    pred = misattribute(truth, 0.05, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PlanWarning)
        plan = plan_sample_size(pred, size_strata(pred), 0.002, error_rate=0.05)
    t = plan.table
    sampled = t[~t["take_all"] & (t["stratum"] != "1")]
    assert t["take_all"].any() and sampled["draws"].sum() >= MIN_PLANNED_DRAWS
    assert plan.half_width <= 0.002


def test_design_choices_and_refusals():
    truth, pred = _population(5, n=600)
    one = pd.Series("all", index=pred.index)
    assert default_design("pairwise_precision") == "predicted_clusters"
    assert default_design("pairwise_recall") == "records"
    plan = plan_sample_size(pred, None, 0.05, metric="pairwise_recall", error_rate=0.1)
    assert plan.design == "records" and "Review" in plan.summary()
    assert plan.n_draws >= MIN_PLANNED_DRAWS
    with pytest.raises(ValueError, match="estimates precision only"):
        plan_sample_size(
            pred, one, 0.05, metric="pairwise_recall", design="predicted_clusters", error_rate=0.1
        )
    with pytest.raises(ValueError, match="one stratum per predicted cluster"):
        mixed = pd.Series(np.arange(len(pred)) % 2, index=pred.index)
        plan_sample_size(pred, mixed, 0.05, error_rate=0.1)
    with pytest.raises(ValueError, match="paired difference is planned from a pilot"):
        plan_sample_size(pred, one, 0.05, metric="pairwise_f1", baseline=pred, error_rate=0.1)
    with pytest.raises(ValueError, match="design must be one of"):
        plan_sample_size(pred, one, 0.05, design="blocks", error_rate=0.1)


def test_paired_difference_plan_from_a_pilot():
    truth, pred = _population(6, n=900)
    other = misattribute(truth, 0.2, seed=9)
    pilot = sample_records(truth, 150, seed=3)
    one = pd.Series("all", index=pred.index)
    same = stratum_sd_from_sample(pred, pilot, one, "pairwise_f1", baseline=pred)
    assert (same == 0).all()  # identical predictions: the difference is exactly 0
    sd = stratum_sd_from_sample(pred, pilot, one, "pairwise_f1", baseline=other)
    a = stratum_sd_from_sample(pred, pilot, one, "pairwise_f1")
    assert sd["all"] > 0 and sd["all"] != pytest.approx(a["all"])
    with pytest.warns(PlanWarning):  # 25 true clusters of 36 records: heavy-tailed
        plan = plan_sample_size(pred, None, 0.05, metric="pairwise_f1", pilot=pilot, baseline=other)
    assert plan.design == "records"
    assert "difference (prediction - baseline)" in plan.assumptions["metric"]


def test_heavy_tail_warning_on_the_record_design_for_precision():
    heavy = pd.Series(np.repeat(np.arange(30), [400] * 3 + [1] * 27), name="p")
    light = pd.Series(np.repeat(np.arange(500), 2), name="p")
    assert link_effective_clusters(heavy) < HEAVY_TAIL_EFFECTIVE_CLUSTERS
    assert link_effective_clusters(light) == pytest.approx(500)
    with pytest.warns(PlanWarning, match="heavy-tailed prediction"):
        plan = plan_sample_size(heavy, None, 0.05, design="records", error_rate=0.05)
    assert plan.warnings and "WARNING: heavy-tailed" in plan.summary()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PlanWarning)
        assert not plan_sample_size(light, None, 0.05, design="records", error_rate=0.05).warnings
        # the predicted-cluster design is not concerned
        assert not plan_sample_size(heavy, None, 0.05, error_rate=0.05).warnings


@pytest.mark.filterwarnings("ignore::er_evaluation.errors.PopulationWarning")
@pytest.mark.filterwarnings("ignore:heavy-tailed prediction")  # PlanWarning
def test_cli_plan_designs_pilot_of_predicted_clusters_and_baseline(tmp_path, capsys):
    truth, pred = _population(7, n=1500)
    other = misattribute(truth, 0.2, seed=2)
    paths = {name: tmp_path / f"{name}.csv" for name in ("pred", "other", "true", "clusters")}
    pred.rename_axis("id").rename("cluster").to_csv(paths["pred"])
    other.rename_axis("id").rename("cluster").to_csv(paths["other"])
    truth[truth.isin(truth.iloc[:300].unique())].rename_axis("id").rename("c").to_csv(paths["true"])
    # a pilot of whole predicted clusters: the records of 10 of them with their truth
    picked = pred.isin(pd.unique(pred.to_numpy())[:10])
    truth[picked].rename_axis("id").rename("c").to_csv(paths["clusters"])
    base = ["plan", str(paths["pred"]), "--half-width", "0.05"]
    assert main([*base, "--pilot", str(paths["clusters"]), "--pilot-of", "predicted"]) == 0
    out = capsys.readouterr().out
    assert "predicted clusters (" in out.splitlines()[0]
    assert "from a reviewed pilot of 10 predicted clusters" in out
    assert main([*base, "--metric", "pairwise_recall", "--error-rate", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "sampled records" in out.splitlines()[0] and "design: records drawn" in out
    assert (
        main(
            [
                *base,
                "--metric",
                "pairwise_f1",
                "--pilot",
                str(paths["true"]),
                "--baseline",
                str(paths["other"]),
            ]
        )
        == 0
    )
    assert "pairwise_f1 difference (prediction - baseline)" in capsys.readouterr().out
    assert (
        main(
            [
                *base,
                "--metric",
                "pairwise_recall",
                "--design",
                "predicted-clusters",
                "--error-rate",
                "0.1",
            ]
        )
        == 1
    )
    assert "estimates precision only" in capsys.readouterr().err


def test_planner_refuses_an_engine_table_by_name():
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("duckdb")
    from er_evaluation.clustering import ClusteringError
    from er_evaluation.engines import table

    held = table(pa.table({"id": [1, 2, 3], "cluster": [1, 1, 2]}))
    for call in (
        lambda: model_precision(held, 0.05),
        lambda: true_size_counts(held, 0.05),
        lambda: plan_sample_size(held, None, 0.05, error_rate=0.1),
    ):
        with pytest.raises(ClusteringError, match="prediction must be a pandas Series.*got Table"):
            call()


# --- the one plan assembly of the command line and the app ---


def _same_plan(a, b) -> None:
    assert (a.design, a.n_draws, a.half_width) == (b.design, b.n_draws, b.half_width)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert a.assumptions == b.assumptions


def test_plan_review_builds_the_default_size_strata_with_take_all():
    truth, pred = _population(8, n=900)
    strata = size_strata(pred, SIZE_BANDS, take_all_size=6)
    take_all = [TAKE_ALL] if (strata == TAKE_ALL).any() else []
    assert take_all  # the population has predicted clusters of 6+ records
    expected = plan_sample_size(pred, strata, 0.05, error_rate=0.05, take_all=take_all)
    _same_plan(plan_review(pred, 0.05, error_rate=0.05, take_all_size=6), expected)
    _same_plan(plan_review(pred, 0.05, design="auto", error_rate=0.05, take_all_size=6), expected)
    # without a take-all size: the default bands, no take-all stratum
    expected = plan_sample_size(pred, size_strata(pred, SIZE_BANDS), 0.05, error_rate=0.05)
    _same_plan(plan_review(pred, 0.05, error_rate=0.05), expected)


def test_plan_review_records_design_is_uniform_unless_bands_or_strata_are_given():
    truth, pred = _population(9, n=900)
    recall = dict(metric="pairwise_recall", error_rate=0.05)
    _same_plan(plan_review(pred, 0.05, **recall), plan_sample_size(pred, None, 0.05, **recall))
    banded = plan_sample_size(pred, size_strata(pred, (2, 5)), 0.05, **recall)
    _same_plan(plan_review(pred, 0.05, bands=(2, 5), **recall), banded)
    column = pd.Series(np.arange(len(pred)) % 3, index=pred.index)
    by_column = plan_sample_size(pred, record_strata(pred, column, level="record"), 0.05, **recall)
    _same_plan(plan_review(pred, 0.05, strata=column, **recall), by_column)
    # a paired difference goes to the record design
    pilot = sample_records(truth, 150, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PlanWarning)
        plan = plan_review(pred, 0.05, pilot=pilot, baseline=misattribute(truth, 0.2, seed=1))
    assert plan.design == "records"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(metric="pairwise_recall", take_all_size=6), "take_all_size=... needs size strata"),
        (dict(strata="column", bands=(2, 5)), "either strata=... .* or size bands"),
        (dict(strata="column", take_all_size=6), "either strata=... .* or size bands"),
        (dict(design="blocks"), "design must be one of"),
        (dict(take_all_size=2.5), "take_all_size must be a whole number"),
        (dict(metric="pairwise_f1", design="predicted_clusters"), "estimates precision only"),
    ],
)
def test_plan_review_refusals(kwargs, message):
    truth, pred = _population(10, n=300)
    if kwargs.get("strata") == "column":
        kwargs = {**kwargs, "strata": pd.Series(0, index=pred.index)}
    with pytest.raises(ValueError, match=message):
        plan_review(pred, 0.05, error_rate=0.05, **kwargs)


def test_cli_plan_is_the_library_plan_with_the_default_bands(tmp_path, capsys):
    truth, pred = _population(11, n=1200)
    path = tmp_path / "pred.csv"
    pred.rename_axis("id").rename("cluster").to_csv(path)
    args = ["plan", str(path), "--half-width", "0.05", "--error-rate", "0.05"]
    assert (
        main([*args, "--take-all-size", "6", "--format", "csv", "-o", str(tmp_path / "t.csv")]) == 0
    )
    capsys.readouterr()
    shown = pd.read_csv(tmp_path / "t.csv")
    expected = plan_review(pred, 0.05, error_rate=0.05, take_all_size=6)
    assert shown["stratum"].astype(str).tolist() == expected.table["stratum"].astype(str).tolist()
    assert shown["draws"].tolist() == expected.table["draws"].tolist()
    # the flags of the library's refusals
    assert main([*args, "--metric", "pairwise_recall", "--take-all-size", "6"]) == 1
    assert "--take-all-size needs size strata: give --bands too" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::er_evaluation.errors.PopulationWarning")
def test_record_rate_models_on_deconvolved_true_sizes():
    """Singletons and pairs (RLdata-like) misattributed at 10%: misattribution turns true
    singletons into predicted pairs, so the predicted sizes taken for the true ones
    under-state recall's S_h; the deconvolved sizes give the census S_h (within 10%)."""
    rng = np.random.default_rng(11)
    sizes = np.where(rng.random(3000) < 0.25, 2, 1)
    truth = pd.Series(np.repeat(np.arange(len(sizes)), sizes))
    pred = misattribute(truth, 0.1, seed=12)
    census = benchmark_sample(truth, weights="cluster_size", multiplicity=truth.value_counts())
    one = pd.Series("all", index=pred.index)
    actual = stratum_sd_from_sample(pred, census, one, "pairwise_recall")["all"]
    model = stratum_sd_from_rates(pred, one, 0.1, "pairwise_recall")["all"]
    assert model == pytest.approx(actual, rel=0.1)
    # two strata: the predicted sizes stand for the true ones (documented as optimistic)
    two = pd.Series(np.arange(len(pred)) % 2, index=pred.index)
    assert stratum_sd_from_rates(pred, two, 0.1, "pairwise_recall").max() < 0.95 * actual
    f1 = stratum_sd_from_sample(pred, census, one, "pairwise_f1")["all"]
    assert stratum_sd_from_rates(pred, one, 0.1, "pairwise_f1")["all"] == pytest.approx(
        f1, rel=0.15
    )


def test_rate_for_recall_inverts_the_binomial_model():
    assert rate_for_recall(0.81) == pytest.approx(0.1)
    assert rate_for_recall(1.0) == 0.0
    with pytest.raises(ValueError, match="recall must be in"):
        rate_for_recall(1.2)


@pytest.mark.slow
def test_pilot_plan_rests_on_the_pilot_or_its_pessimistic_rate_whichever_is_larger():
    """A pilot of 3 predicted clusters per band of a heavy-tailed prediction: the plan's S_h
    is the larger of the pilot's and the misattribution model's at the rate of the lower
    end of the pilot's one-sided 80% interval of precision."""
    from er_evaluation.estimators import estimate
    from er_evaluation.simulation import zipf_clustering

    truth = zipf_clustering(20_000, 2.0, max_size=2_000, seed=3)
    pred = misattribute(truth, 0.05, seed=4)
    strata = size_strata(pred, SIZE_BANDS)
    labels = pd.Series(strata.to_numpy(), index=pred.to_numpy()).groupby(level=0).first()
    pilot = sample_stratified_clusters(
        pred, labels, labels.value_counts().clip(upper=3), seed=5
    ).reviewed_predicted(truth)
    plan = plan_review(pred, 0.002, pilot=pilot)
    sd = plan.table.set_index("stratum")["sd"]
    observed = stratum_sd_from_clusters(pred, pilot, labels).reindex(sd.index)
    low = estimate(pred, pilot, "pairwise_precision", level=2 * PILOT_CONFIDENCE - 1).ci_low
    rate = rate_for_precision(pred, low)
    modelled = stratum_sd_from_cluster_rates(pred, labels, rate, confidence=MODEL_CONFIDENCE)
    expected = np.maximum(observed, modelled.reindex(sd.index))
    np.testing.assert_allclose(sd.to_numpy(), expected.to_numpy(), rtol=1e-12)
    assert (modelled.reindex(sd.index) > observed).any()  # the pilot alone under-states
    assert "pessimistic rate" in plan.assumptions["variance source"]
