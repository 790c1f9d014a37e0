"""The ``er-eval metrics`` and ``er-eval summary`` subcommands: parsing, io, numbers."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics.cluster import pair_confusion_matrix

from er_evaluation.cli import main
from er_evaluation.datasets import load_patentsview_mentions, load_patentsview_predictions
from er_evaluation.io import write_membership
from er_evaluation.metrics import METRIC_FUNCTIONS, evaluate
from er_evaluation.summary import summary_table

PREDICTION = pd.Series(["p1", "p1", "p1", "p2", "p2", "p3"], index=[f"r{i}" for i in range(6)])
REFERENCE = pd.Series(["t1", "t1", "t2", "t2", "t2", "t3"], index=[f"r{i}" for i in range(6)])


@pytest.fixture(scope="module")
def demo_versions():
    versions = load_patentsview_predictions(["2021-12-30", "2022-06-30"])
    return versions["2021-12-30"], versions["2022-06-30"]


@pytest.mark.slow
def test_metrics_demo_table_is_correct(demo_versions, cli):
    code, out, _ = cli(["metrics", "--demo"])
    assert code == 0
    old, new = demo_versions
    assert "evaluated on the 130,097 shared mentions; 3,444 mentions dropped" in out
    values = dict(
        line.rsplit(None, 1)
        for line in out.splitlines()
        if line.split()[:1] and line.split()[0] in METRIC_FUNCTIONS
    )
    assert list(values) == list(METRIC_FUNCTIONS)
    # independent check on the shared mentions with scikit-learn's pair counts
    shared = new.loc[old.index]
    (_, fp2), (fn2, tp2) = pair_confusion_matrix(shared.to_numpy(), old.to_numpy())
    tp, fp, fn = tp2 // 2, fp2 // 2, fn2 // 2
    assert int(values["true_positive_links"].replace(",", "")) == tp
    assert int(values["false_positive_links"].replace(",", "")) == fp
    assert int(values["false_negative_links"].replace(",", "")) == fn
    assert float(values["pairwise_precision"]) == pytest.approx(tp / (tp + fp), abs=5e-5)
    assert float(values["pairwise_recall"]) == pytest.approx(tp / (tp + fn), abs=5e-5)
    # and every printed value is the library's, rounded
    expected = evaluate(old, shared).iloc[0]
    for metric, text in values.items():
        assert float(text.replace(",", "")) == pytest.approx(expected[metric], abs=5e-5)


def test_metrics_demo_csv_and_json(demo_versions, cli):
    code, out, err = cli(
        [
            "metrics",
            "--demo",
            "--format",
            "csv",
            "--metrics",
            "pairwise_precision",
            "true_positive_links",
        ]
    )
    assert code == 0 and "3,444 mentions dropped" in err  # notes stay out of machine output
    table = pd.read_csv(io.StringIO(out), index_col=0)
    assert list(table.columns) == ["pairwise_precision", "true_positive_links"]
    assert table.index.tolist() == ["2021-12-30"]
    old, new = demo_versions
    expected = evaluate(old, new.loc[old.index], ["pairwise_precision", "true_positive_links"])
    assert table.iloc[0]["true_positive_links"] == expected.iloc[0]["true_positive_links"]
    assert table.iloc[0]["pairwise_precision"] == pytest.approx(expected.iloc[0, 0], rel=1e-12)
    code, out, _ = cli(
        ["metrics", "--demo", "--format", "json", "--metrics", "true_positive_links"]
    )
    assert json.loads(out) == {
        "2021-12-30": {"true_positive_links": int(expected.iloc[0]["true_positive_links"])}
    }


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_metrics_on_files(tmp_path, suffix, cli):
    pred = write_membership(PREDICTION, tmp_path / f"pred{suffix}")
    ref = write_membership(REFERENCE, tmp_path / f"ref{suffix}")
    out_file = tmp_path / "out.json"
    code, out, _ = cli(["metrics", str(pred), str(ref), "--format", "json", "-o", str(out_file)])
    assert code == 0 and out == ""
    result = json.loads(out_file.read_text())[str(pred)]
    expected = evaluate(PREDICTION, REFERENCE).iloc[0]
    assert (
        result["true_positive_links"] == 2
        and result["false_positive_links"] == 2
        and result["false_negative_links"] == 2
    )  # hand-counted
    for metric in METRIC_FUNCTIONS:
        assert result[metric] == pytest.approx(expected[metric], rel=1e-12, nan_ok=True)


def test_metrics_table_on_files_with_column_options(tmp_path, cli):
    pred = tmp_path / "pred.csv"
    pred.write_text("cluster,record\n" + "".join(f"{c},{r}\n" for r, c in PREDICTION.items()))
    ref = write_membership(REFERENCE, tmp_path / "ref.csv", id_col="record", cluster_col="cluster")
    args = ["metrics", str(pred), str(ref), "--id-col", "record", "--cluster-col", "cluster"]
    code, out, _ = cli([*args, "--metrics", "pairwise_precision", "true_positive_links"])
    assert code == 0
    lines = out.splitlines()
    assert lines[-2].split() == ["pairwise_precision", "0.5000"]
    assert lines[-1].split() == ["true_positive_links", "2"]


def test_metrics_missing_records_error_and_restrict(tmp_path, cli):
    pred = write_membership(PREDICTION.iloc[:4], tmp_path / "pred.csv")
    ref = write_membership(REFERENCE, tmp_path / "ref.csv")
    code, _, err = cli(["metrics", str(pred), str(ref)])
    assert code == 1
    assert "2 of 6 reference record(s) are absent from the prediction: 'r4', 'r5'" in err
    code, out, _ = cli(
        [
            "metrics",
            str(pred),
            str(ref),
            "--on-missing",
            "restrict",
            "--metrics",
            "true_positive_links",
        ]
    )
    assert code == 0
    assert "CoverageWarning: dropped 2 of 6 reference record(s)" in out
    expected = evaluate(PREDICTION.iloc[:4], REFERENCE.iloc[:4], "true_positive_links").iloc[0, 0]
    assert out.splitlines()[-1].split() == ["true_positive_links", str(expected)]


def test_metrics_int_ids_versus_str_ids(tmp_path, cli):
    ints = pd.Series([1, 1, 2], index=[1, 2, 3])
    pred = write_membership(ints, tmp_path / "pred.parquet")  # parquet keeps int ids
    ref = write_membership(ints, tmp_path / "ref.csv")  # csv ids are read as strings
    # plain integers as text (CSV) match integer ids (Parquet)
    code, out, _ = cli(["metrics", str(pred), str(ref), "--metrics", "pairwise_f1"])
    assert code == 0 and "1.0000" in out
    padded = tmp_path / "padded.csv"
    padded.write_text("record_id,cluster_id\n001,1\n002,1\n003,2\n")
    code, _, err = cli(["metrics", str(pred), str(padded)])
    assert code == 1
    assert "record ids have different types" in err and "('001', '002', '003')" in err


def test_metrics_argument_errors(tmp_path, capsys, cli):
    code, _, err = cli(["metrics", "only_one.csv"])
    assert code == 1 and "expected two files, PREDICTION and REFERENCE, got 1" in err
    code, _, err = cli(["metrics", "a.csv", "b.csv"])
    assert code == 1 and "a.csv: no such file" in err
    code, _, err = cli(["metrics", "--demo", "a.csv"])
    assert code == 1 and "--demo takes no input files" in err
    bad = tmp_path / "dup.csv"
    bad.write_text("id,cluster\nr1,a\nr1,b\n")
    code, _, err = cli(["metrics", str(bad), str(bad)])
    assert code == 1 and "1 record id(s) appear more than once: 'r1'" in err
    code, _, err = cli(["metrics", "--demo", "--metrics", "accuracy"])
    assert code == 1 and "unknown metric(s) 'accuracy'; choose from" in err


def test_summary_on_files_with_names(tmp_path, cli):
    first = write_membership(PREDICTION, tmp_path / "first.csv")
    second = write_membership(REFERENCE, tmp_path / "second.parquet")
    names = pd.DataFrame(
        {
            "rid": PREDICTION.index,
            "given": ["ann", "ann", "bob", "bob", "bo", "ann"],
            "family": ["lee", "lee", "kim", "kim", "kim", "lee"],
        }
    )
    names.to_csv(tmp_path / "names.csv", index=False)
    code, out, _ = cli(
        [
            "summary",
            str(first),
            str(second),
            "--names",
            str(tmp_path / "names.csv"),
            "--names-id-col",
            "rid",
            "--name-col",
            "given",
            "family",
            "--format",
            "csv",
        ]
    )
    assert code == 0
    table = pd.read_csv(io.StringIO(out), index_col=0)
    full_names = pd.Series(names["given"] + " " + names["family"]).set_axis(PREDICTION.index)
    expected = summary_table({"a": PREDICTION, "b": REFERENCE}, names=full_names)
    np.testing.assert_allclose(table.to_numpy(dtype=float), expected.to_numpy(dtype=float))
    assert table.index.tolist() == [str(first), str(second)]
    # hand-computed: first clustering {r0,r1,r2}: ann lee x2, bob kim -> 2 names
    assert table.iloc[0]["n_clusters"] == 3
    assert table.iloc[0]["name_variation_rate"] == pytest.approx(2 / 3)


def test_summary_errors(tmp_path, cli):
    code, _, err = cli(["summary"])
    assert code == 1 and "no CLUSTERING file given" in err
    path = write_membership(PREDICTION, tmp_path / "c.csv")
    names = tmp_path / "names.csv"
    names.write_text("record_id,name\nr0,x\n")
    code, _, err = cli(["summary", str(path), "--names", str(names), "--name-col", "nom"])
    assert code == 1 and "column(s) ['nom'] not found" in err


@pytest.mark.slow
def test_summary_demo(cli):
    code, out, _ = cli(["summary", "--demo", "--format", "json"])
    assert code == 0
    table = pd.DataFrame(json.loads(out)).T
    versions = load_patentsview_predictions()
    assert table.index.tolist() == list(versions)
    mentions = load_patentsview_mentions()
    names = mentions["name_first"] + " " + mentions["name_last"]
    newest = summary_table({"2022-06-30": versions["2022-06-30"]}, names=names).iloc[0]
    for column, value in newest.items():
        assert table.loc["2022-06-30", column] == pytest.approx(value)
    assert table["n_records"].tolist() == [len(v) for v in versions.values()]
    assert {"homonymy_rate", "name_variation_rate"} <= set(table.columns)


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "metrics" in capsys.readouterr().out


@pytest.mark.slow
def test_installed_console_script():
    script = Path(sys.executable).parent / "er-eval"
    assert script.exists(), f"console script not installed next to {sys.executable}"
    with warnings.catch_warnings():
        result = subprocess.run(
            [
                str(script),
                "metrics",
                "--demo",
                "--metrics",
                "pairwise_precision",
                "pairwise_recall",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode == 0, result.stderr
    assert "3,444 mentions dropped" in result.stdout
    rows = dict(line.split() for line in result.stdout.splitlines()[-2:])
    assert float(rows["pairwise_precision"]) == pytest.approx(0.9846, abs=1e-4)
    assert float(rows["pairwise_recall"]) == pytest.approx(0.9176, abs=1e-4)
