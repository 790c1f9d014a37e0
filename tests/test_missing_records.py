"""One missing-records policy (``_coverage.drop_missing``) on every path: records
dropped under ``on_missing="restrict"`` always raise a CoverageWarning that counts them,
and the results report the count."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from er_evaluation import contingency
from er_evaluation.cli import main
from er_evaluation.errors import CoverageError, CoverageWarning
from er_evaluation.estimators import compare, estimate, estimate_table
from er_evaluation.metrics import evaluate, pairwise_precision
from er_evaluation.sampling import sample_clusters, sample_records

TRUTH = pd.Series(np.repeat(np.arange(12), [1, 2, 3, 4, 5, 2, 3, 1, 4, 5, 2, 3]))
TRUTH.index = pd.Index([f"r{i}" for i in range(len(TRUTH))])
PRED = TRUTH.where(TRUTH % 3 != 0, TRUTH + 100).rename("prediction")
PRED.iloc[[4, 9]] = 200


def _dropped_counts(caught) -> list[int]:
    return [
        int(re.match(r"dropped (\d+) of", str(w.message)).group(1))
        for w in caught
        if issubclass(w.category, CoverageWarning)
    ]


def _restrict(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, _dropped_counts(caught)


def test_kernel_warns_and_keeps_the_dropped_ids():
    short = PRED.drop(["r1", "r5"])
    table, counts = _restrict(lambda: contingency(short, TRUTH, on_missing="restrict"))
    assert counts == [2]
    assert table.dropped_reference == 2 and list(table.dropped_reference_ids) == ["r1", "r5"]
    assert table.dropped_prediction == 0
    assert table.transpose().dropped_prediction_ids.equals(table.dropped_reference_ids)
    table, counts = _restrict(
        lambda: contingency(short, TRUTH, scope="prediction", on_missing="restrict")
    )
    assert counts == [2] and table.dropped_reference == 2
    with pytest.raises(CoverageError, match="2 of 35 reference record"):
        contingency(short, TRUTH, scope="prediction")


def test_exact_metrics_warn_and_count():
    short = PRED.drop(["r0", "r2", "r7"])
    table, counts = _restrict(lambda: evaluate(short, TRUTH, on_missing="restrict"))
    assert counts == [3]
    assert table.at["prediction", "pairwise_precision"] == pairwise_precision(
        short, TRUTH[short.index]
    )
    _, counts = _restrict(lambda: pairwise_precision(short, TRUTH, on_missing="restrict"))
    assert counts == [3]


def test_estimates_warn_and_report_dropped_records():
    sample = sample_records(TRUTH, 15, seed=3)
    missing = sample.reference.index[:2]
    short = PRED.drop(missing)
    e, counts = _restrict(lambda: estimate(short, sample, on_missing="restrict"))
    assert counts == [2] and e.dropped_records == 2
    assert e.n_records == len(sample.reference) - 2
    table, counts = _restrict(
        lambda: estimate_table(
            {"short": short, "full": PRED}, sample, ("pairwise_recall",), on_missing="restrict"
        )
    )
    assert counts == [2] and list(table["dropped_records"]) == [2, 0]


def test_sample_of_predicted_clusters_warns_and_counts():
    """The duality path (reviewed predicted clusters) used to drop silently, with
    dropped_records 0."""
    sample = sample_clusters(PRED, 4, replace=False, seed=1).reviewed_predicted(TRUTH)
    reviewed = sample.reference.index
    # the prediction lacks one record of each sampled cluster of 3 or more records
    sizes = PRED[reviewed].map(PRED.value_counts())
    lost = reviewed[sizes >= 3].to_series().groupby(PRED[reviewed[sizes >= 3]]).first()
    assert len(lost) >= 2
    short = PRED.drop(lost)
    e, counts = _restrict(
        lambda: estimate(short, sample, "pairwise_precision", on_missing="restrict")
    )
    assert counts == [len(lost)] and e.dropped_records == len(lost)
    with pytest.raises(CoverageError, match=f"{len(lost)} of {len(reviewed)} reviewed record"):
        estimate(short, sample, "pairwise_precision")


def test_paired_difference_counts_records_missing_from_either_prediction():
    sample = sample_records(TRUTH, 15, seed=3)
    reviewed = sample.reference.index
    a = PRED.drop(reviewed[:1])  # the baseline lacks one reviewed record
    b = PRED.drop(reviewed[1:3])  # the other prediction two others
    versions = {"a": a, "b": b}
    d, counts = _restrict(
        lambda: compare(versions, sample, "pairwise_precision", on_missing="restrict").iloc[0]
    )
    assert sorted(counts) == [1, 2]
    assert d.prediction == "b - a" and d.dropped_records == 3
    both = PRED.drop(reviewed[:2])
    d, _ = _restrict(
        lambda: compare(
            {"a": both, "b": both.copy()}, sample, "pairwise_precision", on_missing="restrict"
        ).iloc[0]
    )
    assert d.dropped_records == 2  # the same two records, counted once


def test_cli_estimate_paired_reports_dropped_records(tmp_path, capsys):
    sample = sample_records(TRUTH, 15, seed=3)
    reviewed = sample.reference.index
    paths = {}
    for name, prediction in (("a", PRED.drop(reviewed[:1])), ("b", PRED)):
        paths[name] = tmp_path / f"{name}.csv"
        prediction.rename("cluster").rename_axis("record").to_frame().to_csv(paths[name])
    ref = tmp_path / "ref.csv"
    sample.reference.rename("cluster").rename_axis("record").to_frame().to_csv(ref)
    argv = ["estimate", str(paths["a"]), str(paths["b"]), "--reference", str(ref)]
    args = [*argv, "--paired", "--on-missing", "restrict", "--format", "json"]
    assert main([*args, "--metrics", "pairwise_precision"]) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)
    assert [r["prediction"] for r in rows] == ["b - a"]
    assert rows[0]["dropped_records"] == 1
    assert "dropped" in err
