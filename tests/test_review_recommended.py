"""The recommended design walked end to end: drawn into a review project (library and
``er-eval review draw --design recommended``), reviewed, estimated, exported and estimated
again from the export; and ``er-eval plan --write-sample`` filled in from the truth and
estimated back. Every route gives the figures of
:func:`~er_evaluation.recommend.estimate_design` on the same draw, to the last bit."""

from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import decide_as_truth as decide
from _helpers import export_and_estimate, filled_sheet

from er_evaluation.errors import UnreliableEstimateWarning
from er_evaluation.io import write_membership
from er_evaluation.recommend import estimate_design, recommend_design
from er_evaluation.review import Project, ReviewError, SampleSettings
from er_evaluation.simulation import misattribute, zipf_clustering

BUDGET = 120
COLUMNS = ["value", "std_error", "ci_low", "ci_high", "n_units", "n_records"]


@pytest.fixture(scope="module")
def world():
    """A heavy-tailed truth of 400 records and a prediction with 10% misattributed records
    (record ids as text, as a records file gives them)."""
    truth = zipf_clustering(400, 2.0, max_size=50, seed=4)
    truth.index = "r" + truth.index.astype(str)
    truth = "e" + truth.astype(str)
    prediction = misattribute(truth, 0.1, seed=5)
    prediction = "p" + prediction.astype(str)
    return truth, prediction


@pytest.fixture
def files(tmp_path, world):
    truth, prediction = world
    pd.DataFrame({"rid": truth.index, "name": [f"name {c}" for c in truth]}).to_csv(
        tmp_path / "records.csv", index=False
    )
    write_membership(prediction, tmp_path / "v1.csv")
    return tmp_path


def make_project(folder, files) -> Project:
    source = {
        "source": "files",
        "records": {"path": str(files / "records.csv"), "id_col": "rid", "fields": ["name"]},
        "predictions": {
            "layout": "long",
            "files": [
                {
                    "path": str(files / "v1.csv"),
                    "version": "v1",
                    "id_col": "record_id",
                    "cluster_col": "cluster_id",
                }
            ],
        },
    }
    return Project.init(folder, source=source, reviewers=["ann", "bob"])


def expected(prediction: pd.Series, truth: pd.Series, seed: int) -> pd.DataFrame:
    """estimate_design on the library's own draw of the recommended design."""
    design = recommend_design(prediction, records=BUDGET)
    draw = design.draw(seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        return estimate_design(
            prediction,
            design.precision_sample(draw, truth),
            design.recall_sample(draw, truth),
            name="v1",
        )


@pytest.mark.slow
def test_a_project_draws_the_recommended_design_and_estimates_it(tmp_path, files, world):
    truth, prediction = world
    project = make_project(tmp_path / "P", files)
    settings = SampleSettings(
        design="recommended", size=BUDGET, seed=3, version="v1", reviewers=("ann", "bob")
    )
    queue = project.draw(settings)
    design = recommend_design(project.data.predictions["v1"], records=BUDGET)
    draw = design.draw(seed=3)
    table = design.review_table(draw)
    # the queue holds exactly the design's records, each unit whole with one reviewer
    assert sorted(queue["record_id"]) == sorted(table.index)
    assert queue.groupby("unit")["reviewer"].nunique().max() == 1
    assert set(queue["reviewer"]) == {"ann", "bob"}
    assert int(queue["draws"].sum()) == design.record_draws
    drawn_clusters = pd.unique(
        prediction.reindex(queue.loc[queue["stratum"] != "recall", "record_id"])
    )
    assert sorted(drawn_clusters) == sorted(draw.clusters.index)

    assert project.sample() == (None, 0)
    # the records drawn for recall first: the strata of predicted clusters wait, and say so
    for name, rows in queue[queue["draws"] > 0].groupby("reviewer"):
        decide(project, name, rows["record_id"], truth)
    with pytest.raises(ReviewError, match="every stratum of predicted clusters needs"):
        project.estimates()
    status = project.status()
    assert status["decisions"] > 0 and "needs a finished review" in status["not estimable yet"]
    # finished units are the queue's units whose every record is decided, counted once:
    # a record drawn for recall inside a drawn cluster is part of that cluster's unit
    decided = queue["record_id"].isin(project.true_clusters().index)
    assert status["finished_units"] == decided.groupby(queue["unit"]).all().sum()
    for name in ("ann", "bob"):
        decide(project, name, queue.loc[queue["reviewer"] == name, "record_id"], truth)
    sample, finished = project.sample()
    assert (queue["draws"] > 0).sum() > 0 and (queue["stratum"] != "recall").any()
    assert (
        finished
        == queue["unit"].nunique()
        == len(draw.clusters) + (queue["stratum"] == "recall").sum()
    )
    status = project.status()
    assert status["finished_units"] == finished == status["queue_units"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        got = project.estimates()
    want = expected(prediction, truth, seed=3)
    pd.testing.assert_frame_equal(got, want)

    # the export, read back, is the same pair of samples
    from er_evaluation._sample_file import read_sample
    from er_evaluation.io import read_table

    bench, design_file = project.export(tmp_path / "bench.csv")
    stored = json.loads(design_file.read_text())
    assert stored["format"] == "er_evaluation.recommended/1"
    frame = read_table(bench)
    back = read_sample(bench, frame.set_index("record_id")["cluster_id"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        again = back.estimates(prediction, name="v1")
    pd.testing.assert_frame_equal(again, want)


@pytest.mark.slow
def test_double_review_of_the_recommended_design(tmp_path, files, world):
    truth, _ = world
    project = make_project(tmp_path / "P", files)
    queue = project.draw(
        SampleSettings(
            design="recommended",
            size=BUDGET,
            seed=3,
            version="v1",
            reviewers=("ann", "bob"),
            double_share=0.5,
        )
    )
    units = queue.drop_duplicates("unit")
    assert units["second_reviewer"].notna().sum() == round(0.5 * len(units))
    assert (units["second_reviewer"] != units["reviewer"]).all()
    for name in ("ann", "bob"):
        mine = queue[(queue["reviewer"] == name) | (queue["second_reviewer"] == name)]
        decide(project, name, mine["record_id"], truth)
    assert len(project.disagreements()) == 0
    assert project.agreement().n_units > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        pd.testing.assert_frame_equal(
            project.estimates(), expected(project.data.predictions["v1"], truth, seed=3)
        )


@pytest.mark.slow
def test_the_cli_walks_the_recommended_design_to_its_export(cli, files, world):
    truth, _ = world
    folder = files / "P"
    code, _, err = cli(
        ["review", "init", folder, "--records", files / "records.csv", "--prediction",
         files / "v1.csv", "--reviewers", "ann,bob"]
    )  # fmt: skip
    assert code == 0, err
    code, _, err = cli(["review", "draw", folder, "--design", "recommended", "--size", 50])
    assert code == 1 and "takes --records N" in err
    code, out, err = cli(
        ["review", "draw", folder, "--design", "recommended", "--records", BUDGET,
         "--reviewers", "ann,bob", "--double", 0.2, "--seed", 3]
    )  # fmt: skip
    assert code == 0, err
    assert "ann:" in out and "bob:" in out
    for name in ("ann", "bob"):
        sheet_file = files / f"{name}.csv"
        code, _, err = cli(["review", "sheet", folder, "-o", sheet_file, "--reviewer", name])
        assert code == 0, err
        sheet = pd.read_csv(sheet_file, dtype=str, keep_default_na=False)
        sheet = filled_sheet(sheet, truth)
        sheet.to_csv(files / f"{name}_done.csv", index=False)
        code, _, err = cli(["review", "import", folder, files / f"{name}_done.csv"])
        assert code == 0, err
    review_out, _, estimate_out, err = export_and_estimate(
        cli, folder, files / "v1.csv", files / "benchmark.csv"
    )
    assert "recommended design from benchmark.sample.json" in err
    reviewed = pd.read_csv(io.StringIO(review_out)).set_index(["prediction", "metric"])
    estimated = pd.read_csv(io.StringIO(estimate_out)).set_index(["prediction", "metric"])
    assert list(reviewed.index.get_level_values("metric")) == [
        "pairwise_precision", "pairwise_recall", "pairwise_f1"
    ]  # fmt: skip
    pd.testing.assert_frame_equal(reviewed[COLUMNS], estimated[COLUMNS])
    want = expected(Project.open(folder).data.predictions["v1"], truth, seed=3)
    # the text a CSV holds is every digit of the float: read back, the very same numbers
    np.testing.assert_array_equal(reviewed["value"].to_numpy(), want["value"].to_numpy())


def fill_plan_sheet(sheet: pd.DataFrame, truth: pd.Series) -> pd.DataFrame:
    """The records to review with their true cluster filled in, and a row added for each
    record of a recall record's true cluster that the sheet does not list."""
    sheet = sheet.copy()
    sheet["true_cluster"] = truth.reindex(sheet["record_id"]).to_numpy()
    recall = sheet.loc[sheet["part"] != "precision", "record_id"]
    mates = truth.index[truth.isin(truth.reindex(recall))].difference(sheet["record_id"])
    extra = pd.DataFrame({"record_id": mates, "true_cluster": truth.reindex(mates).to_numpy()})
    return pd.concat([sheet, extra], ignore_index=True)


def test_plan_write_sample_is_estimable_back(cli, files, world):
    truth, prediction = world
    to_review = files / "to_review.csv"
    code, _, err = cli(
        ["plan", files / "v1.csv", "--records", BUDGET, "--write-sample", to_review, "--seed", 3]
    )
    assert code == 0, err
    assert (files / "to_review.sample.json").exists()
    assert "to_review.sample.json" in err
    sheet = pd.read_csv(to_review, dtype=str)
    assert sheet["record_id"].is_unique and sheet["true_cluster"].isna().all()
    fill_plan_sheet(sheet, truth).to_csv(to_review, index=False)
    code, out, err = cli(
        ["estimate", files / "v1.csv", "--reference", f"{to_review}:record_id:true_cluster",
         "--format", "csv"]
    )  # fmt: skip
    assert code == 0, err
    got = pd.read_csv(io.StringIO(out))
    want = expected(prediction, truth, seed=3)
    for column in ("value", "std_error", "ci_low", "ci_high"):
        np.testing.assert_array_equal(got[column].to_numpy(), want[column].to_numpy())
    assert list(got["n_units"]) == list(want["n_units"])


def test_a_reference_that_does_not_fill_its_design_is_refused(cli, files, world):
    truth, _ = world
    to_review = files / "to_review.csv"
    code, _, err = cli(["plan", files / "v1.csv", "--records", BUDGET, "--write-sample", to_review])
    assert code == 0, err
    sheet = fill_plan_sheet(pd.read_csv(to_review, dtype=str), truth)
    spec = f"{to_review}:record_id:true_cluster"
    # a drawn record left without its true cluster
    sheet.iloc[1:].to_csv(to_review, index=False)
    code, _, err = cli(["estimate", files / "v1.csv", "--reference", spec])
    assert code == 1
    assert "to_review.csv does not give the true cluster of 1 record(s) that " in err
    assert "to_review.sample.json drew for review" in err and "Traceback" not in err
    # a reference of other records (another sample's)
    other = truth[~truth.isin(truth.reindex(sheet["record_id"]))].iloc[:3]
    extra = pd.DataFrame({"record_id": other.index, "true_cluster": other.to_numpy()})
    pd.concat([sheet, extra]).to_csv(to_review, index=False)
    code, _, err = cli(["estimate", files / "v1.csv", "--reference", spec])
    assert code == 1 and "3 record(s) of to_review.csv are in no true cluster" in err
    # another prediction than the design's
    write_membership(misattribute(truth, 0.2, seed=9), files / "v2.csv")
    sheet.to_csv(to_review, index=False)
    code, _, err = cli(["estimate", files / "v2.csv", "--reference", spec])
    assert code == 1 and "pass the prediction it was drawn from" in err


def test_a_second_wave_written_by_plan_estimates_back_with_its_benchmark(cli, files, world):
    truth, prediction = world
    bench = truth[truth.isin(truth.sample(15, random_state=1))]
    write_membership(bench, files / "bench.csv")
    to_review = files / "wave.csv"
    code, _, err = cli(
        ["plan", files / "v1.csv", "--records", BUDGET, "--benchmark", files / "bench.csv",
         "--write-sample", to_review, "--seed", 2]
    )  # fmt: skip
    assert code == 0, err
    sheet = pd.read_csv(to_review, dtype=str)
    listed = sheet[sheet["part"] == "benchmark"]
    assert set(listed["record_id"]) | set(sheet["record_id"]) >= set(bench.index)
    assert listed["true_cluster"].notna().all() and "recall" not in set(sheet["part"])
    sheet["true_cluster"] = truth.reindex(sheet["record_id"]).to_numpy()
    sheet.to_csv(to_review, index=False)
    code, out, err = cli(
        ["estimate", files / "v1.csv", "--reference", f"{to_review}:record_id:true_cluster",
         "--format", "csv"]
    )  # fmt: skip
    assert code == 0, err
    from er_evaluation.sampling import benchmark_sample

    design = recommend_design(
        prediction, records=BUDGET, benchmark=benchmark_sample(bench, weights="cluster_size")
    )
    draw = design.draw(seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnreliableEstimateWarning)
        want = estimate_design(
            prediction,
            design.precision_sample(draw, truth),
            benchmark_sample(bench, weights="cluster_size"),
        )
    got = pd.read_csv(io.StringIO(out))
    np.testing.assert_allclose(got["value"], want["value"], rtol=1e-12)
    np.testing.assert_allclose(got["ci_low"], want["ci_low"], rtol=1e-12)
