"""Metrics per subgroup of records: the exact values against brute force over pairs, every
design's census against the exact values, the paired differences and the equality test
against independent computations, a fixed-seed sample of RLdata10000 against each
group's exact recall, the CLI, and bad input."""

from __future__ import annotations

import io
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import census, giants_with_foreign_records, record_sample
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import fdtrc, stdtr

from er_evaluation.datasets import load_rldata10000
from er_evaluation.designs import sample_stratified, size_strata
from er_evaluation.errors import CoverageError, UndefinedMetricWarning, UnreliableEstimateWarning
from er_evaluation.estimators import compare, estimate
from er_evaluation.estimators._metric_fit import fit, metric_function
from er_evaluation.estimators.groups import (
    ACROSS,
    ACROSS_UNDEFINED,
    compare_by_group,
    equality_p_value,
    equality_statistic,
    estimate_by_group,
    group_equality_test,
    group_metrics,
    group_unit_tables,
)
from er_evaluation.estimators.ratio import Linear
from er_evaluation.sampling import benchmark_sample, sample_blocks, sample_clusters, sample_records
from er_evaluation.simulation import misattribute


def brute_force(prediction: pd.Series, truth: pd.Series, groups: pd.Series) -> pd.DataFrame:
    """Per group (and across groups): true, predicted and correct links, by looping over
    every pair of records."""
    counts: dict = {}
    ids = list(truth.index)
    for a, b in itertools.combinations(ids, 2):
        key = groups[a] if groups[a] == groups[b] else ACROSS
        row = counts.setdefault(key, [0, 0, 0])
        same_t, same_p = truth[a] == truth[b], prediction[a] == prediction[b]
        row[0] += same_t and same_p
        row[1] += same_p
        row[2] += same_t
    return pd.DataFrame(counts, index=["true_positive_links", "predicted_links", "true_links"]).T


# truth {1,2,3}, {4,5}, {6,7}, {8}; prediction {1,4}, {2,3}, {5}, {6,7,8} (Binette et al.
# 2023, Figure 2); groups A = {1,2,4,5}, B = {3,6,7,8}
TRUTH = pd.Series([1, 1, 1, 2, 2, 3, 3, 4], index=range(1, 9))
PRED = pd.Series([1, 2, 2, 1, 3, 4, 4, 4], index=range(1, 9))
GROUPS = pd.Series(list("AABAABBB"), index=range(1, 9))


def test_hand_computed_case():
    # group A: true (1,2), (4,5); predicted (1,4): precision 0/1, recall 0/2
    # group B: true (6,7); predicted (6,7), (6,8), (7,8): precision 1/3, recall 1/1
    # across: true (1,3), (2,3); predicted (2,3): precision 1/1, recall 1/2
    table = group_metrics(PRED, TRUTH, GROUPS)
    assert list(table.index) == ["A", "B", ACROSS]
    np.testing.assert_allclose(table["pairwise_precision"], [0, 1 / 3, 1])
    np.testing.assert_allclose(table["pairwise_recall"], [0, 1, 1 / 2])
    np.testing.assert_allclose(table["pairwise_f1"], [0, 1 / 2, 2 / 3])
    assert table["true_positive_links"].sum() == 2  # the whole prediction's 2 correct links


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 25).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 6), min_size=n, max_size=n),
            st.lists(st.integers(0, 6), min_size=n, max_size=n),
            st.lists(st.sampled_from("xyz"), min_size=n, max_size=n),
        )
    )
)
def test_exact_counts_equal_brute_force(data):
    t, p, g = (pd.Series(v, index=[f"r{i}" for i in range(len(v))]) for v in data)
    got = group_metrics(p, t, g)
    want = brute_force(p, t, g)
    for label in want.index:
        for column in want.columns:
            assert got.at[label, column] == want.at[label, column], (label, column)


@pytest.fixture(scope="module")
def rldata():
    records, truth = load_rldata10000()
    prediction = misattribute(truth, 0.1, seed=1)
    era = np.select(
        [records["by"] < 1950, records["by"] < 1975], ["before 1950", "1950-74"], "1975+"
    )
    return truth, prediction, pd.Series(era, index=records.index)


def _assert_census(table: pd.DataFrame, exact: pd.DataFrame):
    assert list(dict.fromkeys(table["group"])) == list(exact.index)
    for row in table.itertuples():
        assert row.value == pytest.approx(exact.at[row.group, row.metric], abs=1e-12)
        assert row.std_error == pytest.approx(0.0, abs=1e-12)


def test_census_is_exact_every_design(rldata):
    truth, prediction, groups = rldata
    exact = group_metrics(prediction, truth, groups)
    frame = pd.Series(truth.to_numpy() % 40, index=truth.index)
    strata = size_strata(prediction)
    designs = {
        "clusters": census(truth),
        "blocks": sample_blocks(truth, frame, 40, replace=False, seed=0),
        "strata": sample_stratified(truth, strata, len(truth), take_all=list(strata.unique())),
    }
    for name, sample in designs.items():
        table = estimate_by_group({"p": prediction}, sample, groups)
        _assert_census(table, exact)
        # every estimator of precision and recall is exact on a census
        if name == "clusters":
            for estimator in ("cluster", "cluster_block"):
                e = estimate_by_group(
                    {"p": prediction}, sample, groups, ["pairwise_precision"], estimator=estimator
                )
                _assert_census(e, exact)


def test_census_differences_are_exact(rldata):
    truth, prediction, groups = rldata
    other = misattribute(truth, 0.05, seed=7)
    table = compare_by_group({"a": prediction, "b": other}, census(truth), groups)
    ex_a, ex_b = group_metrics(prediction, truth, groups), group_metrics(other, truth, groups)
    assert set(table["prediction"]) == {"b - a"}
    for row in table.itertuples():
        metric = row.metric.removesuffix(" difference")
        want = ex_b.at[row.group, metric] - ex_a.at[row.group, metric]
        assert row.value == pytest.approx(want, abs=1e-12)


def test_record_estimators_on_a_census_of_records(rldata):
    # the record estimator's summands divide by the WHOLE cluster's size (the unit the
    # design drew, |c| draws of it when every record is drawn once): exact on that census
    truth, prediction, groups = rldata
    sample = sample_records(truth, len(truth), replace=False, seed=0)
    exact = group_metrics(prediction, truth, groups)
    for metric in ("pairwise_precision", "pairwise_recall"):
        table = estimate_by_group({"p": prediction}, sample, groups, [metric], estimator="record")
        _assert_census(table, exact)


def test_whole_population_is_the_sum_of_the_groups(rldata):
    # per-unit totals of the groups and across groups add up to the whole prediction's
    truth, prediction, groups = rldata
    sample = sample_records(truth, 300, seed=3)
    tables = group_unit_tables(prediction, sample, groups)
    from er_evaluation.estimators import unit_table

    whole = unit_table(prediction, sample)
    for k in ("tp", "pairs", "plinks", "pout"):
        np.testing.assert_allclose(sum(t.q[k] for t in tables.values()), whole.q[k])
    assert sum(t.predicted_links for t in tables.values()) == whole.predicted_links
    # one group holding every record: its estimates are the package's estimates
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedMetricWarning)
        one = estimate_by_group({"p": prediction}, sample, pd.Series("all", index=truth.index))
    assert (one["group"] == "all").any()
    # one group: no link across groups exists, a row nobody asked for is NaN and says why
    across = one[one["group"] == ACROSS]
    assert across["value"].isna().all() and not across["reliable"].any()
    assert (across["reason"] == ACROSS_UNDEFINED).all()
    for row in one[one["group"] == "all"].itertuples():
        want = estimate(prediction, sample, row.metric)
        assert row.value == pytest.approx(want.value)
        assert row.std_error == pytest.approx(want.std_error)
        assert (row.ci_low, row.ci_high) == pytest.approx((want.ci_low, want.ci_high))


def test_an_undefined_difference_warns_once_and_across_groups_not_at_all():
    # no reviewed record has a predicted link under either version, which differ outside
    # the sample: precision and its difference are undefined, said once, and the
    # "predictions agree on every unit" warning has no interval to speak of
    truth = pd.Series([1, 1, 2, 2, 3, 3], index=range(6))
    a = pd.Series(range(6), index=range(6))
    b = a.where(a < 4, 4)
    sample = record_sample(truth, [1, 2], [1, 1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = compare({"a": a, "b": b}, sample, "pairwise_precision", baseline="a")
    assert math.isnan(d["value"].iloc[0])
    assert [w.category for w in caught] == [UndefinedMetricWarning]
    assert "pairwise_precision of b - a is undefined" in str(caught[0].message)
    # per group: the groups warn, the row of the links across groups does not
    groups = pd.Series(list("AABBCC"), index=range(6))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = compare_by_group({"a": a, "b": b}, sample, groups, ["pairwise_precision"])
    assert t["value"].isna().all()
    said = [str(w.message) for w in caught]
    assert all(issubclass(w.category, UndefinedMetricWarning) for w in caught)
    assert [m.split(" is ")[0] for m in said] == [
        f"pairwise_precision of b - a, group {g}" for g in "ABC"
    ]


def test_rldata_intervals_contain_each_groups_recall(rldata):
    truth, prediction, groups = rldata
    exact = group_metrics(prediction, truth, groups)
    sample = sample_records(truth, 1000, seed=21)
    table = estimate_by_group({"p": prediction}, sample, groups, ["pairwise_recall"])
    assert (table["group"] != ACROSS).any()
    for row in table[table["group"] != ACROSS].itertuples():
        assert row.ci_low <= exact.at[row.group, "pairwise_recall"] <= row.ci_high, row.group
        assert row.reliable


def test_equality_test_of_two_groups_is_the_squared_z_of_their_difference(rldata):
    # with two groups, the Wald statistic is ((θ1 - θ2) / SE(θ1 - θ2))², the SE from the
    # delta method on the difference of the two groups' smooth functions
    truth, prediction, _ = rldata
    groups = pd.Series(np.where(truth.index % 2 == 0, "even", "odd"), index=truth.index)
    sample = sample_records(truth, 400, seed=5)
    tables = group_unit_tables(prediction, sample, groups)
    for metric in ("pairwise_precision", "pairwise_recall"):
        _, pa, ca = metric_function(tables["even"], metric, None, 1.0)
        _, pb, cb = metric_function(tables["odd"], metric, None, 1.0)
        phi = Linear([1.0, -1.0], [pa.rename("a:"), pb.rename("b:")])
        cols = {**{"a:" + k: v for k, v in ca.items()}, **{"b:" + k: v for k, v in cb.items()}}
        f = fit(tables["even"], phi, cols, naive=False)
        z2 = (f.value / f.std_error) ** 2
        test = group_equality_test({"p": prediction}, sample, groups, [metric]).iloc[0]
        assert test["df"] == 1 and test["groups"] == 2
        assert test["statistic"] == pytest.approx(z2, rel=1e-9)
        # Hotelling's F(1, nu) with nu = effective units - 1 is Student's t² on nu
        nu = test["n_effective"] - 1
        assert test["df_denominator"] == pytest.approx(nu)
        assert test["p_value"] == pytest.approx(fdtrc(1, nu, z2))
        assert test["p_value"] == pytest.approx(2 * stdtr(nu, -np.sqrt(z2)))


def test_equality_statistic_without_variance():
    # groups whose estimates no draw tells apart: equal gives 0 (p = 1), different gives
    # inf (p = 0), whatever rounding leaves in the covariance
    grads = np.array([[1e-5, -1e-5, 0, 0], [0, 0, 1e-5, -1e-5]])
    V = np.full((4, 4), 1e10) + np.diag([1e-6, 0, 0, 0])  # rank one: B = A in every unit
    W, df = equality_statistic(np.array([1.0, 1.0]), grads, V)
    assert (W, df) == (0.0, 0)
    assert equality_p_value(W, df, 50) == 1.0
    W, df = equality_statistic(np.array([1.0, 0.9]), grads, V)
    assert np.isinf(W) and equality_p_value(W, df, 50) == 0.0
    # a proper covariance: the two-group statistic is the squared z of the difference
    V = np.diag([2.0, 1.0, 3.0, 1.0])
    grads = np.array([[1.0, 0, 0, 0], [0, 0, 1.0, 0]])
    W, df = equality_statistic(np.array([0.5, 0.2]), grads, V)
    assert df == 1 and W == pytest.approx(0.3**2 / 5.0)
    assert np.isnan(equality_p_value(W, 3, 1.0))  # nu - df + 1 <= 0: too few units


def test_equality_test_on_a_census(rldata):
    truth, prediction, groups = rldata
    test = group_equality_test({"p": prediction}, census(truth), groups)
    assert (test["p_value"] == 0.0).all() and np.isinf(test["statistic"]).all()
    same = group_equality_test({"p": truth}, census(truth), groups, ["pairwise_precision"])
    assert same["p_value"].iloc[0] == 1.0 and same["statistic"].iloc[0] == 0.0


def test_cli_by_equals_library(rldata, tmp_path, cli):
    truth, prediction, groups = rldata
    sample = sample_records(truth, 300, seed=8)
    paths = {k: tmp_path / f"{k}.csv" for k in ("pred", "other", "ref", "groups")}
    other = misattribute(truth, 0.05, seed=9)
    prediction.rename("cluster").to_frame().to_csv(paths["pred"])
    other.rename("cluster").to_frame().to_csv(paths["other"])
    sample.reference.rename("cluster").to_frame().to_csv(paths["ref"])
    groups.rename("era").to_frame().to_csv(paths["groups"])
    argv = ["estimate", paths["pred"], "--reference", paths["ref"], "--format", "csv"]
    code, out, err = cli([*argv, "--by", paths["groups"]])
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out))
    ref = benchmark_sample(sample.reference, weights="cluster_size")
    want = estimate_by_group({"pred": prediction}, ref, groups)
    assert list(got["group"]) == list(want["group"])
    np.testing.assert_allclose(got["value"], want["value"])
    np.testing.assert_allclose(got["ci_low"], want["ci_low"])
    assert "equality across groups" in err and "pred pairwise_recall: W = " in err
    # the two predictions put the same links across groups on every reviewed record
    with pytest.warns(UserWarning, match=r"group \(across groups\): the two predictions agree"):
        code, out, err = cli(
            [*argv[:2], paths["other"], *argv[2:], "--by", paths["groups"], "--paired"]
        )
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out))
    assert set(got["prediction"]) == {"other - pred"}
    assert "other - pred pairwise_f1 difference: W = " in err
    code, _, err = cli([*argv, "--by", f"{paths['groups']}:record_id:decade"])
    assert code == 1 and "no column 'decade'" in err


def _giants_in_two_groups():
    """The 20 giants with foreign records: giants 0-9 and their foreign records in group A,
    giants 10-19 and theirs in B, the singletons alternately in A and B."""
    truth, pred, first_single = giants_with_foreign_records()
    label = truth.to_numpy()
    first_b = 20 + 15 * 10 + 45  # foreign records of giants 0-9: 15 + 16 + ... + 24
    group = np.where(label < 10, "A", "B")
    foreign = (label >= 20) & (label < first_single)
    group[foreign] = np.where(label[foreign] < first_b, "A", "B")
    single = label >= first_single
    group[single] = np.where((label[single] - first_single) % 2 == 0, "A", "B")
    return truth, pred, pd.Series(group, index=truth.index), first_b, first_single


def test_hosts_view_flags_a_group_whose_sample_missed_its_foreign_records():
    # every giant drawn 3 times; 2 foreign records of group B's giants drawn, none of group
    # A's: A's precision interval misses A's truth, and the hosts of A's predicted clusters
    # counted the foreign records the sample missed; B's sample saw its errors
    truth, pred, groups, first_b, first_single = _giants_in_two_groups()
    units = [*range(20), first_b, first_b + 1, *range(first_single, first_single + 40)]
    sample = record_sample(truth, units, [3] * 20 + [1] * 2 + [1] * 40)
    exact = group_metrics(pred, truth, groups)["pairwise_precision"]
    with pytest.warns(UnreliableEstimateWarning, match="group A is not reliable.*hosts' count"):
        t = estimate_by_group({"x": pred}, sample, groups, ["pairwise_precision"])
    a, b = (t[t["group"] == g].iloc[0] for g in ("A", "B"))
    assert not (a.ci_low <= exact["A"] <= a.ci_high)  # the miss the flag is for
    assert not a.reliable and "would be 0.9275" in a.reason
    assert b.reliable and b.ci_low <= exact["B"] <= b.ci_high
    # a paired difference inherits the flag of the group's hosts' view
    fixed = pred.where(truth < 20, truth)  # the foreign records taken out of the giants
    with pytest.warns(UnreliableEstimateWarning, match="hosts' count"):
        d = compare_by_group({"x": pred, "y": fixed}, sample, groups, ["pairwise_precision"])
    assert not d.loc[d["group"] == "A", "reliable"].iloc[0]


def test_hosts_view_leaves_groups_alone_when_their_samples_saw_the_foreign_records():
    # 2 foreign records drawn in each group (about their share of the draws): no flag
    truth, pred, groups, first_b, first_single = _giants_in_two_groups()
    units = [*range(20), 20, 21, first_b, first_b + 1, *range(first_single, first_single + 40)]
    sample = record_sample(truth, units, [3] * 20 + [1] * 4 + [1] * 40)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreliableEstimateWarning)
        t = estimate_by_group({"x": pred}, sample, groups, ["pairwise_precision", "pairwise_f1"])
    assert t.loc[t["group"] != ACROSS, "reliable"].all()


def _merged_giants_in_two_groups():
    """Groups A and B alike: 8 entities of 100 records predicted merged two by two (half
    of the group's predicted links false, in 4 clusters), 500 entities of 2 records
    predicted right."""
    entity, pred, group = [], [], []
    for g in ("A", "B"):
        for k in range(8):
            entity += [f"{g}{k}"] * 100
            pred += [f"{g}m{k // 2}"] * 100
        for k in range(500):
            entity += [f"{g}p{k}"] * 2
            pred += [f"{g}p{k}"] * 2
        group += [g] * 1800
    index = [f"r{i}" for i in range(len(entity))]
    return tuple(pd.Series(x, index=index) for x in (entity, pred, group))


def test_a_group_whose_large_predicted_clusters_no_reviewed_record_reaches_is_flagged():
    # 30 small entities drawn in each group and one entity of each of B's merged clusters:
    # A's sample sees no error (precision 1, interval far above the truth 0.50) while 99%
    # of A's predicted links sit in its 4 unreached clusters; B's sample reaches them all
    truth, pred, groups = _merged_giants_in_two_groups()
    units = [*(f"Ap{k}" for k in range(30)), *(f"Bp{k}" for k in range(30)), "B0", "B2", "B4", "B6"]
    sample = record_sample(truth, units, [1] * len(units))
    exact = group_metrics(pred, truth, groups)
    with pytest.warns(UnreliableEstimateWarning, match="no reviewed record reaches"):
        t = estimate_by_group({"x": pred}, sample, groups).set_index(["group", "metric"])
    a = t.loc[("A", "pairwise_precision")]
    assert not (a.ci_low <= exact.at["A", "pairwise_precision"] <= a.ci_high)  # the miss
    assert not a.reliable
    assert a.reason.startswith(
        "99% of the predicted links of group 'A' sit in large predicted clusters (each at "
        "least 1/64 of them; worth 4.0 equally large ones) that no reviewed record reaches"
    )
    assert "review the group's 800 records in those clusters" in a.reason
    assert not t.at[("A", "pairwise_f1"), "reliable"]
    assert t.at[("A", "pairwise_recall"), "reliable"]  # recall rests on the true links
    b = t.loc["B"]
    assert b["reliable"].all()
    for m in ("pairwise_precision", "pairwise_recall", "pairwise_f1"):
        assert b.at[m, "ci_low"] <= exact.at["B", m] <= b.at[m, "ci_high"]
    # a paired difference is flagged when either version's clusters are out of reach: in
    # the version that splits the merges, B's unreached entities B1, B3, B5, B7
    fixed = truth.rename(None)
    with (
        pytest.warns(UnreliableEstimateWarning, match="no reviewed record reaches"),
        # neither group's sample reaches the records the two versions put apart
        pytest.warns(UserWarning, match="group [AB]: the two predictions agree on all 64 "),
    ):
        d = compare_by_group({"x": pred, "y": fixed}, sample, groups).set_index(["group", "metric"])
    assert not d.at[("A", "pairwise_precision difference"), "reliable"]
    assert d.at[("B", "pairwise_precision difference"), "reason"].startswith(
        "49% of the predicted links of group 'B' sit in large predicted clusters"
    )


def _merged_across_groups():
    """8 entities of 100 records in group A and 8 in B, A's k-th predicted merged with
    B's k-th for k < 2 (20,000 false links across groups, in 2 clusters); 500 entities of
    a record in A and one in B (the true links across groups) and 300 of 2 records in each
    group, predicted right."""
    entity, pred, group = [], [], []
    for g in ("A", "B"):
        for k in range(8):
            entity += [f"{g}{k}"] * 100
            pred += [f"m{k}" if k < 2 else f"{g}{k}"] * 100
        group += [g] * 800
    for k in range(500):
        entity += [f"x{k}"] * 2
        pred += [f"x{k}"] * 2
        group += ["A", "B"]
    for g in ("A", "B"):
        for k in range(300):
            entity += [f"{g}p{k}"] * 2
            pred += [f"{g}p{k}"] * 2
        group += [g] * 600
    index = [f"r{i}" for i in range(len(entity))]
    return tuple(pd.Series(x, index=index) for x in (entity, pred, group))


def test_links_across_groups_in_large_unreached_predicted_clusters_are_flagged():
    # 40 entities split across the groups and 10 of each group's pairs drawn: the sample
    # sees only true links across groups (precision 1) while 98% of them are false and sit
    # in the 2 merged clusters no reviewed record reaches
    truth, pred, groups = _merged_across_groups()
    small = [*(f"x{k}" for k in range(40)), *(f"Ap{k}" for k in range(10))]
    small += [f"Bp{k}" for k in range(10)]
    sample = record_sample(truth, small, [1] * len(small))
    exact = group_metrics(pred, truth, groups).loc[ACROSS]
    assert exact["pairwise_precision"] == pytest.approx(500 / 20_500)
    with pytest.warns(UnreliableEstimateWarning, match="links across groups"):
        t = estimate_by_group({"x": pred}, sample, groups).set_index(["group", "metric"])
    across = t.loc[ACROSS]
    p = across.loc["pairwise_precision"]
    assert not (p.ci_low <= exact["pairwise_precision"] <= p.ci_high)  # the miss
    assert not p.reliable
    assert p.reason.startswith(
        "98% of the links across groups sit in large predicted clusters (each at least 1/60 "
        "of them; worth 2.0 equally large ones) that no reviewed record reaches"
    )
    assert "review 400 records in those clusters" in p.reason
    assert not across.at["pairwise_f1", "reliable"]
    assert across.at["pairwise_recall", "reliable"]  # recall rests on the true links
    # a paired difference with a version that also splits a drawn entity across groups
    # (the two differ on a reviewed unit) is flagged for the same unreached clusters
    other = pred.copy()
    other.iloc[1600] = "alone"  # the record of x0 in group A
    with pytest.warns(UnreliableEstimateWarning, match="links across groups"):
        d = compare_by_group({"x": pred, "y": other}, sample, groups)
    d = d.set_index(["group", "metric"])
    assert d.at[(ACROSS, "pairwise_precision difference"), "reason"].startswith(
        "98% of the links across groups sit in large predicted clusters"
    )


def test_hosts_view_of_the_links_across_groups_against_brute_force():
    # the links across groups of the foreign records of every hosted predicted cluster,
    # counted record by record; on a census every foreign record is a reviewed minority
    # record too, so the two counts agree
    rng = np.random.default_rng(5)
    truth = pd.Series(rng.integers(0, 60, 400), index=[f"r{i}" for i in range(400)])
    pred = misattribute(truth, 0.2, seed=6)
    groups = pd.Series(rng.choice(["A", "B", "C"], 400), index=truth.index)
    hosted = 0.0
    for _, members in pd.DataFrame({"p": pred, "t": truth, "g": groups}).groupby("p"):
        counts = members["t"].value_counts()
        if 2 * counts.iloc[0] > len(members):
            in_group = members["g"].map(members["g"].value_counts())
            foreign = members["t"] != counts.index[0]
            hosted += float(((len(members) - in_group[foreign]) / 2).sum())
    assert hosted > 0
    table = group_unit_tables(pred, census(truth), groups)[ACROSS]
    assert table.host_minority == pytest.approx(hosted)
    assert table.q["minority_checked"].sum() == pytest.approx(hosted)


def test_links_across_groups_reached_by_the_sample_are_left_alone():
    # the same draws and one entity of each merged cluster: the sample sees the false
    # links across groups, no flag, and the intervals cover the links across groups
    truth, pred, groups = _merged_across_groups()
    units = [*(f"x{k}" for k in range(40)), *(f"Ap{k}" for k in range(10))]
    units += [*(f"Bp{k}" for k in range(10)), "A0", "B1"]
    sample = record_sample(truth, units, [1] * len(units))
    exact = group_metrics(pred, truth, groups).loc[ACROSS]
    t = estimate_by_group({"x": pred}, sample, groups).set_index(["group", "metric"])
    across = t.loc[ACROSS]
    assert across["reliable"].all()
    assert not across["reason"].str.contains("no reviewed record reaches").any()
    for m in ("pairwise_precision", "pairwise_recall", "pairwise_f1"):
        assert across.at[m, "ci_low"] <= exact[m] <= across.at[m, "ci_high"]


def test_bad_input_is_named(rldata):
    truth, prediction, groups = rldata
    sample = sample_records(truth, 50, seed=4)
    with pytest.raises(CoverageError, match=r"1 record\(s\) of the prediction have no group: 7"):
        estimate_by_group({"p": prediction}, sample, groups.drop(7))
    with pytest.raises(ValueError, match=r"1 record\(s\) have a missing group: 3"):
        estimate_by_group({"p": prediction}, sample, groups.where(groups.index != 3))
    with pytest.raises(ValueError, match="not available here"):
        estimate_by_group({"p": prediction}, sample, groups, ["bcubed_precision"])
    with pytest.raises(ValueError, match="naive estimator is not available per group"):
        estimate_by_group({"p": prediction}, sample, groups, estimator="naive")
    predicted = sample_clusters(prediction, 20, seed=1).reviewed_predicted(truth)
    with pytest.raises(ValueError, match="TRUE clusters"):
        estimate_by_group({"p": prediction}, predicted, groups)
