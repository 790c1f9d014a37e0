"""One vocabulary: exact metrics, estimators, pair estimates, CLI and app share the
registry's names, and a metric has the same value under its name everywhere."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

import er_evaluation
from er_evaluation import metrics, pairs
from er_evaluation.cli import main
from er_evaluation.estimators import estimate, estimate_table
from er_evaluation.metrics import evaluate
from er_evaluation.pairs import (
    LabelOracle,
    PairPool,
    estimate_from_labels,
    make_sampler,
    sample_labels,
)
from er_evaluation.sampling import sample_clusters
from er_evaluation.vocabulary import (
    ESTIMABLE,
    ESTIMATOR_METRICS,
    FAMILIES,
    KINDS,
    METRIC_NAMES,
    PAIR_ESTIMABLE,
    PREDICTED_SAMPLE_DUALS,
    REGISTRY,
    check_estimable,
    check_metric_names,
    estimable_metrics,
    fscore_name,
    pair_metric_names,
)

# 10 true clusters; the prediction keeps 4 of them exactly, splits, merges and moves records
TRUTH = pd.Series(np.repeat(np.arange(10), [1, 2, 3, 4, 5, 2, 3, 1, 4, 5]), name="truth")
TRUTH.index = pd.Index([f"r{i}" for i in range(len(TRUTH))])
PRED = TRUTH.copy()
PRED.iloc[[3, 4]] = 100  # part of cluster 2 and cluster 3 ...
PRED.iloc[[10, 11, 12]] = 101  # ... a split of cluster 4
PRED.iloc[[16, 17]] = PRED.iloc[15]  # cluster 6 merged into 5
PRED.iloc[25] = 102
PRED = PRED.rename("prediction")


def test_registry_entries_are_complete():
    assert METRIC_NAMES == tuple(REGISTRY)
    for name, m in REGISTRY.items():
        assert m.name == name and m.title and m.family in FAMILIES and m.kind in KINDS
    assert set(PAIR_ESTIMABLE) <= set(ESTIMABLE) <= set(REGISTRY)
    assert PAIR_ESTIMABLE == ("pairwise_precision", "pairwise_recall", "pairwise_f1")


def test_every_name_list_comes_from_the_registry():
    assert tuple(metrics.METRIC_FUNCTIONS) == METRIC_NAMES
    assert ESTIMATOR_METRICS == (*ESTIMABLE, "pairwise_fbeta")
    assert pair_metric_names(1.0) == list(PAIR_ESTIMABLE)


def test_exact_metric_functions_carry_registry_names():
    table = evaluate(PRED, TRUTH)
    functions = [n for n in METRIC_NAMES if hasattr(metrics, n)]
    # only the by-cluster B-cubed variants, the normalised distance and the link counts
    # are table columns without a function of their own (they are options or PairCounts)
    assert set(METRIC_NAMES) - set(functions) == {
        "true_positive_links",
        "false_positive_links",
        "false_negative_links",
        "bcubed_precision_by_cluster",
        "bcubed_recall_by_cluster",
        "bcubed_f1_by_cluster",
        "normalized_merge_distance",
    }
    for name in functions:
        assert getattr(metrics, name)(PRED, TRUTH) == pytest.approx(table.at["prediction", name])
    for family in ("pairwise", "cluster", "bcubed"):
        f1 = getattr(metrics, f"{family}_f1")(PRED, TRUTH)
        fbeta = getattr(metrics, f"{family}_fbeta")
        assert fbeta(PRED, TRUTH, beta=1) == pytest.approx(f1)
        assert fbeta(PRED, TRUTH, beta=2) != pytest.approx(f1)
    assert not hasattr(metrics, "pairwise_fscore") and not hasattr(metrics, "bcubed_fscore")


def test_counts_are_counts():
    table = evaluate(PRED, TRUTH)
    counts = [n for n, m in REGISTRY.items() if m.kind == "count"]
    links = metrics.pairwise_counts(PRED, TRUTH)
    assert table.at["prediction", "true_positive_links"] == links.true_positives
    assert table.at["prediction", "false_positive_links"] == links.false_positives
    assert table.at["prediction", "false_negative_links"] == links.false_negatives
    for name in counts:
        value = table.at["prediction", name]
        assert value == int(value) and value >= 0
    proportions = [n for n, m in REGISTRY.items() if m.kind == "proportion"]
    assert ((table[proportions] >= 0) & (table[proportions] <= 1)).all(axis=None)


def test_census_estimate_equals_exact_metric_for_every_estimable_name():
    """A census (every true cluster reviewed, without replacement) has no sampling error:
    each estimable metric estimated under its name equals the exact metric of that name."""
    census = sample_clusters(TRUTH, TRUTH.nunique(), replace=False, seed=0)
    exact = evaluate(PRED, TRUTH).loc["prediction"]
    assert exact["cluster_f1"] > 0  # some clusters are exact, so every metric is defined
    for name in ESTIMABLE:
        e = estimate(PRED, census, name, ci_method="normal")
        assert e.metric == name
        assert e.value == pytest.approx(exact[name], abs=1e-12), name
    table = estimate_table({"prediction": PRED}, census, ESTIMABLE, ci_method="normal")
    assert list(table["metric"]) == list(ESTIMABLE)
    np.testing.assert_allclose(table["value"], exact[list(ESTIMABLE)].astype(float), atol=1e-12)
    f2 = estimate(PRED, census, "pairwise_fbeta", beta=2, ci_method="normal")
    assert f2.metric == "pairwise_f2" == fscore_name("pairwise", 2)
    assert f2.value == pytest.approx(metrics.pairwise_fbeta(PRED, TRUTH, beta=2), abs=1e-12)


def test_pair_estimates_use_the_same_names_and_values():
    """Every pair of the population labelled once (passive census of the pool): the pair
    estimates equal the exact pairwise metrics of the same names."""
    ids = TRUTH.index.to_numpy()
    left, right = np.triu_indices(len(ids), k=1)
    frame = pd.DataFrame(
        {
            "id_left": ids[left],
            "id_right": ids[right],
            "score": np.linspace(0, 1, len(left)),
            "predicted": (PRED.to_numpy()[left] == PRED.to_numpy()[right]).astype(int),
            "label": (TRUTH.to_numpy()[left] == TRUTH.to_numpy()[right]).astype(int),
        }
    )
    pool = PairPool.from_frame(frame, label_col="label")
    run = sample_labels(
        pool, make_sampler("passive", pool, 0), LabelOracle(pool.labels), pool.n_pairs
    )
    result = estimate_from_labels(run, pool.predicted, beta=[1, 2]).to_frame().set_index("metric")
    assert list(result.index) == [
        "pairwise_precision",
        "pairwise_recall",
        "pairwise_f1",
        "pairwise_f2",
    ]
    exact = evaluate(PRED, TRUTH).loc["prediction"]
    for name in PAIR_ESTIMABLE:
        assert result.at[name, "value"] == pytest.approx(exact[name]), name
    f2 = metrics.pairwise_fbeta(PRED, TRUTH, beta=2)
    assert result.at["pairwise_f2", "value"] == pytest.approx(f2)
    assert pool.truth(2) == pytest.approx(
        {
            "pairwise_precision": exact["pairwise_precision"],
            "pairwise_recall": exact["pairwise_recall"],
            "pairwise_f2": f2,
        }
    )


def test_pair_metric_names_are_precision_recall_and_each_f_beta():
    assert pair_metric_names(1) == list(PAIR_ESTIMABLE)
    assert pair_metric_names([2, 0.5]) == [
        "pairwise_precision",
        "pairwise_recall",
        "pairwise_f2",
        "pairwise_f0.5",
    ]


@pytest.mark.parametrize(
    ("beta", "name"),
    [(1, "pairwise_f1"), (1.0, "pairwise_f1"), (2, "pairwise_f2"), (0.5, "pairwise_f0.5")],
)
def test_fscore_name(beta, name):
    assert fscore_name("pairwise", beta) == name
    assert fscore_name("bcubed", beta) == name.replace("pairwise", "bcubed")


@pytest.mark.parametrize("beta", [0, -1, float("inf"), float("nan"), "two"])
def test_fscore_name_rejects_bad_beta(beta):
    with pytest.raises(ValueError, match="beta must be a positive finite number"):
        fscore_name("pairwise", beta)
    with pytest.raises(ValueError, match="beta must be a positive finite number"):
        estimate(PRED, sample_clusters(TRUTH, 3, seed=0), "pairwise_fbeta", beta=beta)


def test_fscore_name_rejects_other_families():
    with pytest.raises(ValueError, match="family must be one of pairwise, cluster, bcubed"):
        fscore_name("rand", 1)


def test_check_metric_names():
    assert check_metric_names("rand_index", METRIC_NAMES) == ["rand_index"]
    assert check_metric_names(("homogeneity", "v_measure"), ESTIMABLE) == [
        "homogeneity",
        "v_measure",
    ]
    with pytest.raises(
        ValueError, match=r"unknown metric\(s\) 'precision'; choose from: pairwise_precision"
    ):
        check_metric_names(["precision"], METRIC_NAMES)
    with pytest.raises(ValueError, match=r"estimable metric\(s\) 'rand_index' not available here"):
        check_metric_names("rand_index", ESTIMABLE, what="estimable metric")
    with pytest.raises(
        ValueError, match=r"unknown metric\(s\) 'b3_f1'; 'merge_count' not available"
    ):
        check_metric_names(["b3_f1", "merge_count"], ESTIMABLE)
    with pytest.raises(ValueError, match="no metric given"):
        check_metric_names([], ESTIMABLE)


@pytest.mark.parametrize("old", ["precision", "recall", "f1", "fscore", "b3_precision", "TP"])
def test_old_names_are_rejected_everywhere(old):
    census = sample_clusters(TRUTH, 3, seed=0)
    with pytest.raises(ValueError, match="choose from"):
        evaluate(PRED, TRUTH, old)
    with pytest.raises(ValueError, match="choose from"):
        estimate(PRED, census, old)
    with pytest.raises(ValueError, match="choose from"):
        estimate_table({"p": PRED}, census, [old])


@pytest.mark.filterwarnings("ignore::er_evaluation.errors.PopulationWarning")
def test_cli_metrics_and_estimate_accept_the_same_names(tmp_path, capsys):
    pred, ref = tmp_path / "pred.csv", tmp_path / "ref.csv"
    PRED.rename("cluster").rename_axis("record").to_frame().to_csv(pred)
    TRUTH.rename("cluster").rename_axis("record").to_frame().to_csv(ref)
    names = ["pairwise_precision", "bcubed_f1", "homogeneity"]
    assert main(["metrics", str(pred), str(ref), "--format", "json", "--metrics", *names]) == 0
    exact = json.loads(capsys.readouterr().out)[str(pred)]
    assert list(exact) == names
    argv = ["estimate", str(pred), "--reference", str(ref), "--weights", "uniform"]
    assert main([*argv, "--format", "json", "--ci-method", "normal", "--metrics", *names]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["metric"] for r in rows] == names
    # the reference holds every true cluster, so the plug-in values are the exact values
    # (the bias correction assumes draws with replacement, hence the plug-in)
    for row in rows:
        assert row["plugin"] == pytest.approx(exact[row["metric"]], abs=1e-9)
    for command in ("metrics", "estimate"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = re.sub(r"\s+", " ", capsys.readouterr().out)
        assert "pairwise_precision, pairwise_recall, pairwise_f1" in text


def test_no_module_is_shadowed_by_a_function_of_its_name():
    import importlib
    import pkgutil
    import types

    names = [
        m.name
        for m in pkgutil.walk_packages(er_evaluation.__path__, "er_evaluation.")
        # the app's pages are Streamlit scripts, run by Streamlit rather than imported
        if m.name != "er_evaluation.__main__" and not m.name.startswith("er_evaluation.app.")
    ]
    for name in names:
        importlib.import_module(name)
    for name in names:
        parent, _, child = name.rpartition(".")
        attribute = getattr(importlib.import_module(parent), child, None)
        assert attribute is None or isinstance(attribute, types.ModuleType), name
    assert callable(er_evaluation.contingency) and callable(pairs.stratify)


def test_what_a_sample_estimates_is_one_rule():
    three = ("pairwise_precision", "pairwise_recall", "pairwise_f1")
    assert estimable_metrics("predicted", three) == ("pairwise_precision",)
    assert estimable_metrics("reference", three) == three
    assert estimable_metrics("predicted") == tuple(PREDICTED_SAMPLE_DUALS)
    assert estimable_metrics("reference") == ESTIMATOR_METRICS
    assert check_estimable("bcubed_precision", "predicted") == "bcubed_precision"
    with pytest.raises(ValueError, match="estimates precision only .*: review true clusters"):
        check_estimable("pairwise_recall", "predicted")
    with pytest.raises(ValueError, match="unknown estimable metric"):
        check_estimable("pairwise_recal", "reference")
    with pytest.raises(ValueError, match="sample_of must be"):
        estimable_metrics("blocks")
