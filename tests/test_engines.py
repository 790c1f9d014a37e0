"""The kernel on DuckDB and Spark gives what the in-memory (pandas) kernel gives: every
exact metric, estimator and summary statistic to 1e-12 on the bundled data and on random
clusterings, and the same validation errors (same message, same five named ids).

The ``engine`` fixture (tests/conftest.py) runs each test on DuckDB and on one shared
Spark session (local[2]); ``as_engine_table`` turns a membership Series into a table
held by that engine.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from er_evaluation import contingency
from er_evaluation.datasets import (
    load_patentsview_benchmark,
    load_patentsview_mentions,
    load_patentsview_predictions,
    load_rldata10000,
)
from er_evaluation.engines import table
from er_evaluation.errors import ClusteringError, CoverageError
from er_evaluation.estimators import estimate_table
from er_evaluation.metrics import METRIC_FUNCTIONS, evaluate
from er_evaluation.sampling import benchmark_sample, sample_clusters, sample_records
from er_evaluation.simulation import misattribute
from er_evaluation.summary import cluster_size_distribution, summary_statistics, summary_table
from er_evaluation.vocabulary import ESTIMATOR_METRICS

TOL = 1e-12


def assert_frames_close(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(got.columns) == list(want.columns)
    assert list(got.index) == list(want.index)
    for column in want.columns:
        a, b = got[column].to_numpy(), want[column].to_numpy()
        if want[column].dtype.kind in "iu":
            assert (a == b).all(), column
        elif want[column].dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=0, atol=TOL, err_msg=column)
        else:
            assert (a == b).all(), column


def messages(run) -> tuple[object, list[str]]:
    """Result (or the raised error as ``(type, message)``) and the warnings of ``run()``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = run()
        except (ClusteringError, CoverageError, ValueError) as error:
            result = (type(error), str(error))
    return result, [f"{w.category.__name__}: {w.message}" for w in caught]


@pytest.fixture(scope="module")
def patentsview():
    versions = load_patentsview_predictions(["2021-12-30", "2022-06-30"])
    return versions["2021-12-30"], versions["2022-06-30"]


def test_every_metric_identical_on_patentsview(engine, as_engine_table, patentsview):
    prediction, reference = patentsview
    want, want_warnings = messages(lambda: evaluate(prediction, reference, on_missing="restrict"))
    got, got_warnings = messages(
        lambda: evaluate(
            {prediction.name: as_engine_table(prediction)},
            as_engine_table(reference),
            on_missing="restrict",
        )
    )
    assert_frames_close(got, want)
    assert got_warnings == want_warnings  # the same count and the same three named ids


def test_every_metric_identical_on_rldata(engine, as_engine_table):
    _, truth = load_rldata10000()
    prediction = misattribute(truth, 0.1, seed=3)
    want = evaluate(prediction, truth)
    got = evaluate(as_engine_table(prediction), as_engine_table(truth))
    assert_frames_close(got, want.rename(index={want.index[0]: got.index[0]}))


def assert_same_estimates(prediction, sample, as_engine_table, **options) -> None:
    """The normal-interval estimate table of ``prediction`` as a pandas Series and as an
    engine table: the same frame."""
    want = estimate_table({"p": prediction}, sample, ci_method="normal", **options)
    got = estimate_table({"p": as_engine_table(prediction)}, sample, ci_method="normal", **options)
    assert_frames_close(got, want)


def test_every_estimator_identical_on_patentsview(engine, as_engine_table, patentsview):
    prediction = patentsview[1]
    sample = benchmark_sample(load_patentsview_benchmark(), weights="cluster_size")
    assert_same_estimates(
        prediction, sample, as_engine_table, metrics=ESTIMATOR_METRICS, on_missing="restrict"
    )


def test_estimators_identical_on_rldata_record_sample(engine, as_engine_table):
    _, truth = load_rldata10000()
    prediction = misattribute(truth, 0.2, seed=1)
    sample = sample_records(truth, 200, seed=5)
    assert_same_estimates(prediction, sample, as_engine_table, metrics=ESTIMATOR_METRICS)


def test_predicted_cluster_sample_identical(engine, as_engine_table):
    _, truth = load_rldata10000()
    prediction = misattribute(truth, 0.2, seed=4)
    sample = sample_clusters(prediction, 40, seed=2).reviewed_predicted(truth)
    metrics = ["pairwise_precision", "cluster_precision", "bcubed_precision"]
    assert_same_estimates(prediction, sample, as_engine_table, metrics=metrics)


@pytest.mark.slow
def test_summary_identical_on_patentsview(engine, as_engine_table, patentsview):
    mentions = load_patentsview_mentions()
    names = (mentions["name_first"] + " " + mentions["name_last"]).rename("name")
    names.iloc[::97] = None  # some records without a name are counted, not dropped
    clustering = patentsview[0]
    want = summary_statistics(clustering, names=names)
    got = summary_statistics(as_engine_table(clustering), names=as_engine_table(names))
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=0, atol=TOL)
    assert list(got.index) == list(want.index)
    if engine == "spark":
        return  # the two functions below share that code path; one Spark run is enough
    assert_frames_close(
        summary_table({"a": as_engine_table(clustering)}), summary_table({"a": clustering})
    )
    pd.testing.assert_series_equal(
        cluster_size_distribution(as_engine_table(clustering)),
        cluster_size_distribution(clustering),
    )


@st.composite
def clusterings(draw):
    """Two clusterings with int or str ids, records on one side only, and a chance of
    every validation problem (duplicate ids, missing cluster ids)."""
    n = draw(st.integers(1, 25))
    string_ids = draw(st.booleans())
    ids = [f"r{i:02d}" for i in range(n)] if string_ids else [7 * i - 20 for i in range(n)]
    k = draw(st.integers(1, n))
    pred = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    ref = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    prediction = pd.Series(pred, index=pd.Index(ids), dtype=np.int64)
    reference = pd.Series(ref, index=pd.Index(ids), dtype=np.int64)
    if draw(st.booleans()):
        prediction = prediction.astype(str).radd("p")
    if draw(st.booleans()):  # one-side records
        reference = reference[np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))]
        prediction = prediction.iloc[draw(st.integers(0, max(n - 2, 0))) :]
    if draw(st.integers(0, 9)) == 0 and len(reference) > 1:  # a duplicated id
        reference = pd.concat([reference, reference.iloc[:1]])
    if draw(st.integers(0, 9)) == 0 and len(prediction):  # a missing cluster id
        prediction = prediction.astype(object)
        prediction.iloc[-1] = None
    return prediction, reference.sample(frac=1.0, random_state=draw(st.integers(0, 9)))


def _cells(ct) -> dict:
    return {
        (ct.pred_labels[p], ct.ref_labels[r]): int(c)
        for p, r, c in zip(ct.pred, ct.ref, ct.count, strict=True)
    }


_RANDOM = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.slow
@settings(max_examples=40, **_RANDOM)
@given(data=clusterings(), on_missing=st.sampled_from(["error", "restrict"]))
def test_random_clusterings_identical_duckdb(as_duckdb_table, data, on_missing):
    _check_random(as_duckdb_table, data, on_missing, ("shared", "prediction"))


@settings(max_examples=4, **_RANDOM)  # every Spark query is a job of ~1 s
@given(data=clusterings(), on_missing=st.sampled_from(["error", "restrict"]))
def test_random_clusterings_identical_spark(spark, as_spark_table, data, on_missing):
    _check_random(as_spark_table, data, on_missing, ("shared",))


def _check_random(as_engine_table, data, on_missing, scopes):
    prediction, reference = data
    for scope in scopes:
        want, want_warnings = messages(
            lambda: contingency(prediction, reference, scope=scope, on_missing=on_missing)  # noqa: B023
        )
        got, got_warnings = messages(
            lambda: contingency(  # noqa: B023
                as_engine_table(prediction),
                as_engine_table(reference),
                scope=scope,  # noqa: B023
                on_missing=on_missing,
            )
        )
        assert got_warnings == want_warnings
        if isinstance(want, tuple):
            assert got == want
            continue
        assert _cells(got) == _cells(want)
        assert (got.n_records, got.n_shared, got.dropped_reference, got.dropped_prediction) == (
            want.n_records,
            want.n_shared,
            want.dropped_reference,
            want.dropped_prediction,
        )
        assert (got.n_pred_clusters, got.n_ref_clusters, got.predicted_links) == (
            want.n_pred_clusters,
            want.n_ref_clusters,
            want.predicted_links,
        )
        if scope == "shared":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # undefined metrics: NaN on both
                values = [[f(ct) for f in METRIC_FUNCTIONS.values()] for ct in (got, want)]
            np.testing.assert_allclose(values[0], values[1], rtol=0, atol=TOL)


def _bad_inputs():
    ids = [f"r{i}" for i in range(12)]
    good = pd.Series([i // 3 for i in range(12)], index=pd.Index(ids))
    dup = pd.concat([good, good.iloc[[5, 1, 9, 2, 7, 3, 0]]])
    missing = good.astype(object)
    missing.iloc[[11, 4, 8, 0, 6, 2]] = None
    return {
        "duplicate prediction ids": (dup, good),
        "duplicate reference ids": (good, dup),
        "missing cluster ids": (missing, good),
        "reference records absent": (good.iloc[7:], good),
        "prediction records absent": (good, good.iloc[[3, 1]]),
        "no shared ids": (good.rename(lambda i: i + "x"), good),
        "id types differ": (good.set_axis(range(12)), good),
        "empty reference": (good, good.iloc[:0]),
    }


@pytest.mark.parametrize("case", list(_bad_inputs()))
@pytest.mark.parametrize("on_missing", ["error", "restrict"])
def test_validation_errors_identical(engine, as_engine_table, case, on_missing):
    if engine == "spark" and on_missing == "restrict":
        pytest.skip("Spark: the restrict policy is checked on PatentsView (one Spark job ~1 s)")
    prediction, reference = _bad_inputs()[case]
    for scope in ("shared", "prediction") if engine == "duckdb" else ("shared",):
        want = messages(
            lambda: contingency(prediction, reference, scope=scope, on_missing=on_missing)  # noqa: B023
        )
        got = messages(
            lambda: contingency(  # noqa: B023
                as_engine_table(prediction),
                as_engine_table(reference),
                scope=scope,  # noqa: B023
                on_missing=on_missing,
            )
        )
        if isinstance(want[0], tuple):
            assert got[0] == want[0]
        else:
            assert (got[0].n_shared, got[0].dropped_reference) == (
                want[0].n_shared,
                want[0].dropped_reference,
            )
        assert got[1] == want[1]


def test_files_are_read_in_place(tmp_path):
    prediction = pd.Series(["a", "a", "b"], index=pd.Index(["007", "7", "8"]))
    reference = pd.Series(["x", "y", "y"], index=pd.Index(["007", "7", "8"]))
    frame = lambda s: pd.DataFrame({"rec": s.index, "cl": s.to_numpy()})  # noqa: E731
    frame(prediction).to_csv(tmp_path / "p.csv", index=False)
    frame(reference).to_parquet(tmp_path / "r.parquet")
    got = evaluate(
        table(tmp_path / "p.csv", "rec", "cl"), table(tmp_path / "r.parquet", "rec", "cl")
    )
    want = evaluate(prediction.rename("p"), reference)
    assert_frames_close(got, want.rename(index={"p": got.index[0]}))
    with pytest.raises(ClusteringError, match=r"record id column 'id' not found; columns are"):
        evaluate(table(tmp_path / "p.csv", "id", "cl"), reference)
    with pytest.raises(FileNotFoundError, match="no such file"):
        table(tmp_path / "absent.parquet")


def test_duckdb_tables_and_relations():
    duckdb = pytest.importorskip("duckdb")
    _, truth = load_rldata10000()
    prediction = misattribute(truth, 0.1, seed=2)
    con = duckdb.connect()
    con.register("p_frame", pd.DataFrame({"id": prediction.index, "c": prediction.to_numpy()}))
    con.execute("CREATE TABLE pred AS SELECT * FROM p_frame")
    relation = con.sql("SELECT id AS record, c AS person FROM pred")
    want = evaluate(prediction, truth)
    got = evaluate(table("pred", "id", "c", connection=con), truth)
    assert_frames_close(got, want.rename(index={want.index[0]: got.index[0]}))
    got = evaluate(table(relation, connection=con), truth)
    assert_frames_close(got, want.rename(index={want.index[0]: got.index[0]}))


def test_missing_duckdb_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "duckdb", None)
    with pytest.raises(ImportError, match=r"pip install 'er_evaluation_toolkit\[duckdb\]'"):
        contingency(table(pa.table({"id": [1], "c": [1]})), pd.Series([1], index=[1]))


@pytest.fixture(scope="module")
def clustering_files(tmp_path_factory, patentsview):
    """Two PatentsView versions and the benchmark as Parquet files."""
    from er_evaluation.io import write_membership

    folder = tmp_path_factory.mktemp("cli")
    prediction, reference = patentsview
    paths = {
        "prediction": write_membership(prediction, folder / "v2021.parquet"),
        "reference": write_membership(reference, folder / "v2022.parquet"),
        "benchmark": write_membership(load_patentsview_benchmark(), folder / "bench.parquet"),
    }
    return {k: str(v) for k, v in paths.items()}


@pytest.mark.parametrize("command", ["metrics", "summary", "estimate"])
def test_cli_engine_flag_gives_the_same_output(capsys, clustering_files, command):
    pytest.importorskip("duckdb")
    from er_evaluation.cli import main

    files = clustering_files
    argv = {
        "metrics": ["metrics", files["prediction"], files["reference"], "--on-missing", "restrict"],
        "summary": ["summary", files["prediction"], files["reference"]],
        "estimate": [
            "estimate",
            files["prediction"],
            "--reference",
            files["benchmark"],
            "--on-missing",
            "restrict",
            "--format",
            "json",
        ],
    }[command]
    outputs = {}
    for engine in ("pandas", "duckdb"):
        assert main([*argv, "--engine", engine]) == 0
        outputs[engine] = capsys.readouterr()
    assert outputs["duckdb"].out == outputs["pandas"].out
    assert outputs["duckdb"].err == outputs["pandas"].err


def test_cli_auto_engine_reads_large_parquet_with_duckdb(tmp_path, monkeypatch):
    pytest.importorskip("duckdb")
    from er_evaluation.cli import _common

    small = tmp_path / "small.parquet"
    pd.DataFrame({"id": [1, 2], "cluster": [1, 1]}).to_parquet(small)
    assert _common.engine_for(str(small), "auto") == "pandas"
    monkeypatch.setattr(_common, "AUTO_DUCKDB_MB", 0)
    assert _common.engine_for(str(small), "auto") == "duckdb"
    assert _common.engine_for(str(tmp_path / "x.csv"), "auto") == "pandas"
    assert _common.engine_for(str(small), "spark") == "spark"


@pytest.mark.parametrize("command", ["metrics", "estimate"])
def test_cli_errors_name_the_file_on_every_engine(tmp_path, capsys, engine, command):
    from er_evaluation.cli import main

    prediction, reference = tmp_path / "pred.csv", tmp_path / "ref.csv"
    prediction.write_text("id,cluster\n1,a\n1,b\n2,c\n3,c\n")
    reference.write_text("id,cluster\n1,a\n2,c\n3,c\n")
    argv = {
        "metrics": ["metrics", str(prediction), str(reference)],
        "estimate": ["estimate", str(prediction), "--reference", str(reference)],
    }[command]
    errors = {}
    for name in ("pandas", engine):
        assert main([*argv, "--engine", name]) != 0
        errors[name] = capsys.readouterr().err
    assert f"{prediction}: 1 record id(s) appear more than once: '1'" in errors["pandas"]
    assert errors[engine] == errors["pandas"]
