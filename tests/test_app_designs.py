"""AppTest of the three sample designs end to end on a small project of your own files:
draw on the Sample page, review every queued record (through the store, with the true
clusters known), and check the Estimates page against the library on the same sample."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from _helpers import ENTRY, choose_reviewer, run_app, write_files_project  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from er_evaluation.estimators import estimate_table  # noqa: E402
from er_evaluation.review import Project, ReviewStore  # noqa: E402
from er_evaluation.sampling import Sample, benchmark_sample  # noqa: E402

# Two blocks of six records; true clusters lie inside blocks.
TRUTH = pd.Series(
    ["a", "a", "a", "b", "b", "c", "d", "d", "d", "e", "e", "f"],
    index=[f"r{i:02d}" for i in range(1, 13)],
)
BLOCKS = pd.Series(["x"] * 6 + ["y"] * 6, index=TRUTH.index)
V1 = pd.Series(["p", "p", "q", "q", "q", "s", "t", "t", "t", "t", "u", "w"], index=TRUTH.index)
V2 = pd.Series(["p", "p", "p", "q", "q", "q", "t", "t", "t", "u", "u", "w"], index=TRUTH.index)


@pytest.fixture
def project(project, tmp_path) -> Path:
    """The shared project folder, configured with a small records table and two versions."""
    folder = project
    records = pd.DataFrame(
        {"rid": TRUTH.index, "name": [f"name {c}" for c in TRUTH], "blk": BLOCKS.to_numpy()}
    )
    wide = pd.DataFrame({"rid": TRUTH.index, "v1": V1.to_numpy(), "v2": V2.to_numpy()})
    folder.mkdir()
    records.to_csv(tmp_path / "records.csv", index=False)
    wide.to_csv(tmp_path / "wide.csv", index=False)
    write_files_project(
        folder,
        tmp_path / "records.csv",
        tmp_path / "wide.csv",
        fields=["name"],
        version_cols=["v1", "v2"],
        block_col="blk",
        benchmark=None,
    )
    return folder


def draw(design: str, size: int) -> AppTest:
    at = AppTest.from_file(ENTRY, default_timeout=120).run()
    at.switch_page("views/sample.py").run()
    at.radio(key="sample_design").set_value(design)
    at.number_input(key="sample_size").set_value(size)
    at.selectbox(key="sample_version").set_value("v1")
    at.button(key="draw_sample").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def review_everything(project: Path) -> ReviewStore:
    """Review queue records in order until each is in a reviewed true cluster, correcting
    v1's cluster to the truth (remove the wrong records, add the missing ones)."""
    queue = pd.read_parquet(project / "queue.parquet")
    store = ReviewStore(project / "reviews.sqlite")
    for record in queue["record_id"]:
        if store.reviewed_records() and record in store.true_clusters().index:
            continue
        shown = set(V1.index[V1 == V1[record]])
        true = set(TRUTH.index[TRUTH == TRUTH[record]])
        store.record_review(
            reviewer="ann",
            sampled_record=record,
            predicted_cluster=V1[record],
            shown_records=sorted(shown),
            removed=sorted(shown - true),
            added=sorted(true - shown),
            version="v1",
        )
    return store


def shown_estimates(at: AppTest) -> pd.DataFrame:
    at.switch_page("views/estimates.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at.dataframe[-1].value.set_index(["prediction", "metric"])["value"]


def expected(
    sample: Sample, metrics=("pairwise_precision", "pairwise_recall", "pairwise_f1"), versions=None
) -> pd.Series:
    versions = versions or {"v1": V1, "v2": V2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = estimate_table(versions, sample, metrics, on_missing="restrict")
    return table.set_index(["prediction", "metric"])["value"]


def same_partition(a: pd.Series, b: pd.Series) -> bool:
    return a.index.equals(b.index) and pd.crosstab(a, b).astype(bool).sum().eq(1).all()


@pytest.mark.slow
def test_block_design(project):
    at = draw("blocks", 1)
    queue = pd.read_parquet(project / "queue.parquet")
    block = BLOCKS[queue["record_id"].iloc[0]]
    assert set(queue["record_id"]) == set(BLOCKS.index[BLOCKS == block])
    store = review_everything(project)
    truth = store.true_clusters()
    assert same_partition(truth.sort_index(), TRUTH[BLOCKS == block].sort_index())
    sample = benchmark_sample(
        truth,
        weights="uniform",
        blocks=BLOCKS[truth.index],
        replace=False,
        population_size=2,
        design="blocks",
    )
    pd.testing.assert_series_equal(shown_estimates(at), expected(sample))


def test_record_design(project):
    at = draw("records", 4)
    queue = pd.read_parquet(project / "queue.parquet")
    assert len(queue) == 4 and queue["record_id"].is_unique
    store = review_everything(project)
    truth = store.true_clusters()
    draws = truth[queue["record_id"]].value_counts()
    sample = benchmark_sample(
        truth,
        weights="cluster_size",
        multiplicity=draws,
        replace=False,
        population_size=12,
        design="records",
    )
    assert sample.n_draws == 4
    pd.testing.assert_series_equal(shown_estimates(at), expected(sample))


def test_predicted_cluster_design_estimates_precision_only(project):
    at = draw("clusters", 2)
    queue = pd.read_parquet(project / "queue.parquet")
    units = queue["unit"].unique()
    assert len(units) == 2
    assert set(queue["record_id"]) == set(V1.index[V1.isin(units)])
    store = review_everything(project)
    truth = store.true_clusters()
    reviewed = truth[queue["record_id"]]
    sample = Sample(
        reference=reviewed,
        units=pd.Index(units),
        multiplicity=np.ones(2, dtype=np.int64),
        probability=np.ones(2),
        design="clusters",
        weights="uniform",
        replace=False,
        population_size=V1.nunique(),
        sample_of="predicted",
    )
    shown = shown_estimates(at)
    assert list(shown.index.get_level_values("metric").unique()) == ["pairwise_precision"]
    # Only the version the clusters were drawn from: its clusters are the sampled units.
    pd.testing.assert_series_equal(shown, expected(sample, ("pairwise_precision",), {"v1": V1}))


def test_integer_ids_from_parquet_and_records_without_names(tmp_path, monkeypatch):
    folder = tmp_path / "intproject"
    monkeypatch.setenv("ER_EVAL_PROJECT_DIR", str(folder))
    ids = np.arange(101, 113)
    pd.DataFrame({"rid": ids, "label": [f"n{c}" for c in TRUTH]}).to_parquet(tmp_path / "r.parquet")
    pd.DataFrame({"rid": ids, "v1": pd.factorize(V1)[0]}).to_parquet(tmp_path / "p.parquet")
    folder.mkdir()
    write_files_project(
        folder,
        tmp_path / "r.parquet",
        tmp_path / "p.parquet",
        fields=["label"],
        version_cols=["v1"],
    )
    at = draw("records", 3)
    at.switch_page("views/review.py").run()
    assert not at.exception, [e.value for e in at.exception]
    record = pd.read_parquet(folder / "queue.parquet")["record_id"].iloc[0]
    table = at.data_editor[0].value
    assert table["record"].iloc[0] == record and len(table) > 1
    at.session_state[f"cluster_{record}"] = {
        "edited_rows": {1: {"does not belong": True}},
        "added_rows": [],
        "deleted_rows": [],
    }
    outside = int(next(i for i in ids if i not in set(table["record"])))
    at.session_state[f"added_{record}"] = [outside]  # as the search panel would add it
    at.run()
    assert not at.exception and not at.error  # no name columns: no name check, no failure
    choose_reviewer(at, folder, "ann")
    at.button(key=f"save_{record}").click().run()
    assert not at.exception
    decision = ReviewStore(folder / "reviews.sqlite").decision(int(record))
    assert isinstance(decision.sampled_record, int)
    assert decision.removed == (int(table["record"].iloc[1]),)
    assert decision.added == (outside,)


def test_a_sample_of_other_data_is_flagged_not_crashed(project):
    draw("records", 3)
    config = json.loads((project / "project.json").read_text())
    config["predictions"]["version_cols"] = ["v2"]  # the sampled version is gone
    (project / "project.json").write_text(json.dumps(config))
    at = run_app()
    assert "draw a new one" in at.warning[0].value and "'v1'" in at.warning[0].value
    at.switch_page("views/sample.py").run()
    assert not at.exception and "draw a new one" in at.warning[0].value
    assert "'v1'" in at.warning[0].value  # the sample page names the reason too


@pytest.mark.slow
@pytest.mark.parametrize(("design", "size"), [("records", 2), ("clusters", 2), ("blocks", 1)])
def test_cli_estimates_the_same_numbers_as_the_app(project, tmp_path, design, size):
    from er_evaluation.cli import main

    at = draw(design, size)
    review_everything(project)
    at.switch_page("views/estimates.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    app = at.dataframe[-1].value.set_index(["prediction", "metric"])
    out = tmp_path / "cli.csv"
    assert main(["review", "estimate", str(project), "--format", "csv", "-o", str(out)]) == 0
    cli = pd.read_csv(out).set_index(["prediction", "metric"])
    assert list(cli.index) == list(app.index)
    for column in ("value", "std_error", "ci_low", "ci_high", "n_units", "n_records"):
        np.testing.assert_allclose(cli[column], app[column].astype(float), rtol=1e-12)


@pytest.mark.slow
def test_cli_review_status_agreement_and_export(project, tmp_path, capsys):
    from er_evaluation.cli import main
    from er_evaluation.io import read_membership

    draw("records", 4)
    store = review_everything(project)
    assert main(["review", "status", str(project), "--format", "csv"]) == 0
    status = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out), index_col=0)["value"]
    assert status["decisions"] == str(len(store.decisions()))
    assert status["conflicts"] == "0" and status["queue_records"] == "4"
    # No double review yet: agreement says so in one line.
    assert main(["review", "agreement", str(project)]) == 1
    assert "no record has been decided by two reviewers" in capsys.readouterr().err
    first = store.decisions().iloc[0]
    store.record_review(
        reviewer="bob",
        sampled_record=first["sampled_record"],
        predicted_cluster=first["predicted_cluster"],
        shown_records=first["shown_records"],
    )
    assert main(["review", "agreement", str(project), "--format", "csv"]) == 0
    table = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out), index_col=0)
    assert table.loc["double_reviewed", "value"] == 1
    out = tmp_path / "bench.csv"
    assert main(["review", "export", str(project), "-o", str(out), "--reviewer", "ann"]) == 0
    exported = read_membership(out, "record_id", "cluster_id")
    sample, _ = Project.open(project).sample(reviewer="ann")
    assert set(exported.index) == set(sample.reference.index)
    assert (tmp_path / "bench.sample.json").exists()  # the sample's design beside it
    assert main(["review", "status", str(tmp_path / "nowhere")]) == 1
    assert "no such project folder" in capsys.readouterr().err


@pytest.mark.slow
def test_recommended_design_shows_estimate_design(project):
    from er_evaluation.recommend import estimate_design, recommend_design

    at = draw("recommended", 8)
    queue = pd.read_parquet(project / "queue.parquet")
    design = recommend_design(V1, records=8)
    drawn = design.draw(seed=1)  # the form's seed
    assert sorted(queue["record_id"]) == sorted(design.review_table(drawn).index)
    truth = review_everything(project).true_clusters()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = estimate_design(
            V1,
            design.precision_sample(drawn, truth),
            design.recall_sample(drawn, truth),
            name="v1",
        )
    shown = shown_estimates(at)
    assert len(table) > 0
    # the version its predicted clusters were drawn from, every metric of the design
    pd.testing.assert_series_equal(shown, table.set_index(["prediction", "metric"])["value"])
    # its report: the same figures, the design's strata, every version
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        at.button(key="build_report").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    _, page = at.session_state["report"]
    assert "<h2>Contributions of the strata</h2>" in page and "v2 - v1" in page
    # the recall sample reaches no record where v1 and v2 differ: the report's reader
    # is told in its notes, not the server's log
    assert "of v2 - v1: the two predictions agree on all" in page
    assert not [w for w in caught if "agree on all" in str(w.message)]
    for value in table["value"]:
        assert f'<td class="num">{value:.4f}</td>' in page
    assert "download_report" in at.session_state


@pytest.mark.slow
def test_the_recommended_design_downloads_with_its_design(project):
    at = AppTest.from_file(ENTRY, default_timeout=120).run()
    at.switch_page("views/sample.py").run()
    at.number_input(key="recommend_records").set_value(10)
    at.button(key="recommend_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == [
        "Download the records to review (CSV)",
        "Download its design (records_to_review.sample.json)",
    ]
