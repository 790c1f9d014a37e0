"""The recommended design on the road a user walks: ``er-eval plan --records`` prints it
with its cost in records to read and writes the records to review; an existing uniform
benchmark (the bundled PatentsView one) completed by a second wave of predicted clusters
reviewed whole, the estimate combining both."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from er_evaluation.datasets import load_patentsview_benchmark, load_patentsview_predictions
from er_evaluation.estimators import estimate
from er_evaluation.io import read_table, write_membership
from er_evaluation.metrics import pairwise_precision
from er_evaluation.recommend import estimate_design, recommend_design
from er_evaluation.sampling import benchmark_sample
from er_evaluation.simulation import misattribute, zipf_clustering


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plan")
    truth = zipf_clustering(3_000, 2.0, max_size=200, seed=1)
    truth.index = "r" + truth.index.astype(str)
    prediction = misattribute(truth, 0.1, seed=2)
    write_membership(prediction, folder / "prediction.csv")
    bench = truth[truth.isin(truth.sample(40, random_state=3))]
    write_membership(bench, folder / "benchmark.csv")
    return folder, truth, prediction


def test_plan_records_prints_the_design_and_writes_the_records_to_review(files, cli):
    folder, _, prediction = files
    out_file = folder / "to_review.csv"
    code, out, err = cli(
        ["plan", folder / "prediction.csv", "--records", 800, "--write-sample", out_file]
    )
    assert code == 0, err
    design = recommend_design(prediction, records=800)
    assert out == design.summary() + "\n"
    assert "records to read" in out and "predicted clusters whole" in out
    table = read_table(out_file)
    expected = design.review_table(design.draw(seed=0)).reset_index()
    assert table["record_id"].astype(str).tolist() == expected["record_id"].tolist()
    assert table["record_id"].is_unique and table["true_cluster"].isna().all()
    precision = table[table["part"].isin(["precision", "both"])]
    # every record of every drawn predicted cluster, each cluster whole
    drawn = prediction[prediction.astype(str).isin(precision["predicted_cluster"].astype(str))]
    assert sorted(precision["record_id"]) == sorted(drawn.index)
    recall = table[table["part"].isin(["recall", "both"])]
    assert recall["draws"].astype(int).sum() == design.record_draws
    assert (table.loc[table["part"] == "precision", "draws"].astype(int) == 0).all()
    assert (folder / "to_review.sample.json").exists()


def test_plan_records_with_a_benchmark_is_a_second_wave(files, cli):
    folder, _, _ = files
    code, out, err = cli(
        ["plan", folder / "prediction.csv", "--records", 800, "--benchmark",
         folder / "benchmark.csv", "--format", "csv"]
    )  # fmt: skip
    assert code == 0, err
    table = pd.read_csv(pd.io.common.StringIO(out), index_col=0)
    assert "recall" not in table.index and table.loc["take-all", "to_review"] > 0
    assert "Recall comes from the existing benchmark" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "give --records N"),
        (["--records", 100, "--half-width", 0.02], "give --records N"),
        (["--records", 100, "--error-rate", 0.1], "--error-rate: options of the sample-size"),
        (["--half-width", 0.02, "--error-rate", 0.1, "--write-sample", "x.csv"], "--write-sample"),
        (["--records", 0], "records"),
    ],
)
def test_plan_refuses_mixed_roads(files, cli, argv, message):
    folder, _, _ = files
    code, _, err = cli(["plan", folder / "prediction.csv", *argv])
    assert code != 0 and message in err


@pytest.mark.slow
def test_patentsview_benchmark_completed_by_a_second_wave():
    """The bundled Binette 2022 benchmark gives recall; a second wave reviews predicted
    clusters of the 2021-12-30 disambiguation whole (the take-all part and the bands) for
    precision. The newest disambiguation stands in for the second wave's reviewers here,
    so the wave's precision is checked against the exact precision of 2021-12-30 with
    respect to it; recall is the benchmark's estimate unchanged."""
    versions = load_patentsview_predictions(["2021-12-30", "2022-06-30"])
    prediction, stand_in = versions["2021-12-30"], versions["2022-06-30"]
    reviewed = load_patentsview_benchmark()
    # the benchmark's records of this version (later patents are not in it)
    reviewed = reviewed[reviewed.index.isin(prediction.index)]
    benchmark = benchmark_sample(reviewed, weights="cluster_size")
    design = recommend_design(prediction, records=6_000, benchmark=benchmark)
    assert design.record_draws == 0 and len(design.take_all) >= 1
    draw = design.draw(seed=0)
    wave = design.precision_sample(draw, stand_in.reindex(prediction.index))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = estimate_design(prediction, wave, benchmark).set_index("metric")
        alone = estimate(prediction, benchmark, "pairwise_recall")
    p = table.loc["pairwise_precision"]
    exact = pairwise_precision(prediction, stand_in.reindex(prediction.index))
    assert p.ci_low <= exact <= p.ci_high
    r = table.loc["pairwise_recall"]
    assert (r.value, r.ci_low, r.ci_high) == pytest.approx(
        (alone.value, alone.ci_low, alone.ci_high)
    )
    f = table.loc["pairwise_f1"]
    assert np.isfinite(f.value) and f.ci_low <= f.value <= f.ci_high
