from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from er_evaluation.datasets import load_patentsview_benchmark, load_patentsview_predictions
from er_evaluation.estimators import compare, estimate_table
from er_evaluation.io import read_membership
from er_evaluation.sampling import benchmark_sample, sample_records
from er_evaluation.simulation import misattribute


@pytest.fixture()
def files(tmp_path):
    rng = np.random.default_rng(0)
    truth = pd.Series(np.repeat(np.arange(300), rng.integers(1, 9, size=300)).astype(str))
    truth.index = pd.Index([f"r{i}" for i in range(len(truth))], name="record")
    sample = sample_records(truth, 50, seed=1)
    paths = {}
    for seed, (name, rate) in enumerate((("alpha", 0.1), ("beta", 0.25))):
        pred = misattribute(truth, rate, seed=seed)
        paths[name] = tmp_path / f"{name}.csv"
        pred.rename("cluster").to_frame().to_csv(paths[name])
    paths["ref"] = tmp_path / "ref.csv"
    sample.reference.rename("cluster").to_frame().to_csv(paths["ref"])
    return paths


def test_estimate_csv_equals_library(files, cli):
    argv = ["estimate", str(files["alpha"]), str(files["beta"]), "--reference", str(files["ref"])]
    code, out, err = cli([*argv, "--format", "csv"])
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out))
    preds = {k: read_membership(files[k]) for k in ("alpha", "beta")}
    sample = benchmark_sample(read_membership(files["ref"]), weights="cluster_size")
    want = estimate_table(
        preds, sample, metrics=("pairwise_precision", "pairwise_recall", "pairwise_f1")
    )
    assert list(got["prediction"]) == ["alpha"] * 3 + ["beta"] * 3
    assert list(got["metric"]) == ["pairwise_precision", "pairwise_recall", "pairwise_f1"] * 2
    for col in ("value", "std_error", "ci_low", "ci_high", "n_units", "n_records"):
        np.testing.assert_allclose(got[col], want[col], err_msg=col)
    assert "95% confidence intervals" in err


def test_estimate_options_reach_the_library(files, cli):
    argv = [
        "estimate",
        str(files["alpha"]),
        "--reference",
        str(files["ref"]),
        "--weights",
        "uniform",
        "--metrics",
        "pairwise_precision",
        "--level",
        "0.9",
        "--ci-method",
        "normal",
        "--format",
        "json",
    ]
    code, out, err = cli(argv)
    assert code == 0, err
    (row,) = json.loads(out)
    sample = benchmark_sample(read_membership(files["ref"]), weights="uniform")
    want = estimate_table(
        {"alpha": read_membership(files["alpha"])},
        sample,
        metrics=("pairwise_precision",),
        level=0.9,
        ci_method="normal",
    ).iloc[0]
    assert row["prediction"] == "alpha" and row["metric"] == "pairwise_precision"
    assert row["ci_method"] == "normal" and row["level"] == 0.9
    assert row["estimator"] == want["estimator"]
    for col in ("value", "std_error", "ci_low", "ci_high"):
        assert row[col] == pytest.approx(want[col])


def test_estimate_paired_equals_compare(files, cli):
    argv = ["estimate", str(files["alpha"]), str(files["beta"]), "--reference", str(files["ref"])]
    code, out, err = cli([*argv, "--paired", "--metrics", "pairwise_precision", "--format", "csv"])
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out))
    preds = {k: read_membership(files[k]) for k in ("alpha", "beta")}
    sample = benchmark_sample(read_membership(files["ref"]))
    want = compare(preds, sample, "pairwise_precision").iloc[0]
    assert len(got) == 1
    assert got["prediction"].iloc[0] == want.prediction
    assert got["value"].iloc[0] == pytest.approx(want.value)
    assert got["std_error"].iloc[0] == pytest.approx(want.std_error)


def test_estimate_table_output_to_file(files, tmp_path, cli):
    out_path = tmp_path / "out.txt"
    argv = ["estimate", str(files["alpha"]), "--reference", str(files["ref"]), "-o", str(out_path)]
    code, out, err = cli(argv)
    assert code == 0 and out == ""
    text = out_path.read_text()
    assert "pairwise_precision" in text and "cluster_block" in text and "dropped_records" in text


def test_estimate_missing_records_error_or_restrict(files, tmp_path, cli):
    pred = read_membership(files["alpha"])
    ref = read_membership(files["ref"])
    gone = ref.index[:3]
    partial = tmp_path / "partial.csv"
    pred.drop(gone).rename("cluster").to_frame().to_csv(partial)
    argv = ["estimate", str(partial), "--reference", str(files["ref"])]
    code, out, err = cli(argv)
    assert code == 1
    assert "absent" in err and str(gone[0]) in err
    code, out, err = cli([*argv, "--on-missing", "restrict", "--format", "json"])
    assert code == 0, err
    rows = json.loads(out)
    assert {r["dropped_records"] for r in rows} == {3}


def test_estimate_argument_errors(files, cli):
    code, _, err = cli(["estimate", str(files["alpha"])])
    assert code == 1 and "--reference" in err
    code, _, err = cli(["estimate", "--reference", str(files["ref"])])
    assert code == 1 and "PREDICTION" in err
    code, _, err = cli(["estimate", "--demo", str(files["alpha"])])
    assert code == 1 and "--demo" in err
    argv = ["estimate", str(files["alpha"]), "--reference", str(files["ref"]), "--paired"]
    code, _, err = cli(argv)
    assert code == 1 and "two predictions" in err


@pytest.mark.slow
def test_estimate_demo_equals_library(cli):
    argv = [
        "estimate",
        "--demo",
        "--metrics",
        "pairwise_precision",
        "pairwise_recall",
        "--ci-method",
        "normal",
    ]
    code, out, err = cli([*argv, "--format", "csv"])
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out))
    preds = load_patentsview_predictions()
    sample = benchmark_sample(load_patentsview_benchmark(), weights="cluster_size")
    with pytest.warns(Warning):
        want = estimate_table(
            preds,
            sample,
            metrics=("pairwise_precision", "pairwise_recall"),
            ci_method="normal",
            on_missing="restrict",
        )
    assert list(got["prediction"].astype(str)) == [v for v in preds for _ in range(2)]
    for col in ("value", "std_error", "ci_low", "ci_high", "dropped_records"):
        np.testing.assert_allclose(got[col], want[col], err_msg=col)
    dropped = got.groupby("prediction", sort=False)["dropped_records"].first()
    reference = load_patentsview_benchmark()
    for version, pred in preds.items():
        assert dropped[version] == len(reference.index.difference(pred.index))
    assert dropped.iloc[-1] == 0 and dropped.iloc[0] > 0
    assert "Binette" in err and "dropped" in err
