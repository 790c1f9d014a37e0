"""Files and the command line: every read error names its file (a compressed file that
does not decompress included), integer ids in CSV and Parquet files compare equal under a
documented rule (``--id-type`` forces one type), every F-score name the documentation
uses is accepted, and a mistyped flag, command, choice or metric gets the closest valid
name."""

from __future__ import annotations

import bz2
import gzip
import json

import numpy as np
import pandas as pd
import pytest

from er_evaluation.errors import InputFileError, PopulationWarning
from er_evaluation.estimators import estimate, estimate_table
from er_evaluation.io import read_table
from er_evaluation.metrics import evaluate, pairwise_fbeta
from er_evaluation.metrics.bcubed import bcubed_fbeta
from er_evaluation.metrics.cluster import cluster_fbeta
from er_evaluation.sampling import benchmark_sample
from er_evaluation.vocabulary import check_metric_names, parse_fscore

IDS = range(1, 21)
CLUSTERS = [i // 3 for i in range(20)]


@pytest.fixture
def files(tmp_path):
    """The same clustering as CSV (ids read as text) and as Parquet (integer ids)."""
    frame = pd.DataFrame({"id": IDS, "c": CLUSTERS})
    frame.to_csv(tmp_path / "x.csv", index=False)
    frame.to_parquet(tmp_path / "x.parquet", index=False)
    return tmp_path


# -- every read error names the file ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("a.csv.gz", b"id,c\n1,2\n", "gzip"),
        ("a.csv.gz", gzip.compress(b"id,c\n1,2\n3,4\n")[:15], "gzip"),
        ("a.csv.bz2", b"id,c\n1,2\n", "bz2"),
        ("a.tsv.xz", b"id\tc\n1\t2\n", "xz"),
        ("a.csv.zip", b"id,c\n1,2\n", "zip"),
    ],
)
def test_a_file_that_does_not_decompress_is_named(tmp_path, name, content, kind):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputFileError, match=rf"^{path}: cannot decompress it as {kind} \("):
        read_table(path)


def test_a_compressed_file_reads(tmp_path):
    path = tmp_path / "a.csv.bz2"
    path.write_bytes(bz2.compress(b"id,c\n1,2\n"))
    assert read_table(path).to_dict("list") == {"id": ["1"], "c": ["2"]}


@pytest.mark.parametrize(
    ("content", "encoding", "message"),
    [
        (b"id,clu\x00ster\n1,a\n", "utf-8", r"the name of column 2 \('clu\\x00ster'\) holds"),
        (b'"i\nd",c\n1,a\n', "utf-8", r"the name of column 1 \('i\\nd'\) holds"),
        (b"\xef\xbb\xbf\xef\xbb\xbfid,c\n1,a\n", "utf-8", r"column 1 \('\\ufeffid'\) holds"),
        (b"id,,c\n1,a,b\n", "utf-8", "column 2 has no name in the header"),
        (b",id,c\n0,1,a\n", "utf-8", "column 1 has no name in the header"),
        (b"id, \n1,a\n", "utf-8", "column 2 has no name in the header"),
        (b"id,c,id\n1,a,2\n", "utf-8", r"columns 1 and 3 are both named 'id'; give"),
        (
            b"id,c, id\n1,a,2\n",
            "utf-8",
            r"both named 'id' \(once surrounding spaces are stripped\)",
        ),
        (b"\xef\xbb\xbfid,c\n1,a\n", "latin-1", "byte-order mark read as latin-1 text"),
    ],
)
def test_a_header_that_would_not_read_as_written_is_refused_naming_file_and_column(
    tmp_path, content, encoding, message
):
    # pandas would read these as 'clu\x00ster', 'Unnamed: 1', 'id.1', ' id' or 'ï»¿id'
    for name in ("a.csv", "a.csv.gz"):
        path = tmp_path / name
        path.write_bytes(gzip.compress(content) if name.endswith(".gz") else content)
        with pytest.raises(InputFileError, match=rf"^{path}: .*{message}"):
            read_table(path, encoding=encoding)


def test_a_header_check_spares_what_reads_as_written(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b"\xef\xbb\xbfid, cluster \n1,a\n")  # one BOM: utf-8's own mark
    assert list(read_table(path).columns) == ["id", " cluster "]
    frame = pd.DataFrame({"id": [1], "": ["a"]})
    frame.to_parquet(tmp_path / "a.parquet")
    with pytest.raises(InputFileError, match="a.parquet: column 2 has no name"):
        read_table(tmp_path / "a.parquet")


def test_the_command_line_names_a_nul_byte_in_a_header(cli, tmp_path):
    path = tmp_path / "pred.csv"
    path.write_bytes(b"id,clu\x00ster\n1,a\n2,a\n")
    code, out, err = cli(["metrics", path, path])
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and f"{path}: the name of column 2" in err


def test_the_command_line_names_a_bad_gzip_file(cli, files):
    (files / "bad.csv.gz").write_text("id,c\n1,2\n")
    code, _, err = cli(["metrics", files / "bad.csv.gz", files / "x.csv"])
    assert code == 1
    assert err.startswith(f"er-eval metrics: error: {files / 'bad.csv.gz'}: cannot decompress")
    assert "Traceback" not in err


# -- integer ids in CSV and Parquet -------------------------------------------------------


@pytest.mark.parametrize("order", [("x.csv", "x.parquet"), ("x.parquet", "x.csv")])
def test_plain_integer_ids_in_csv_match_parquet_integer_ids(cli, files, order):
    code, out, err = cli(
        ["metrics", *(files / f for f in order), "--metrics", "pairwise_f1", "--format", "json"]
    )
    assert (code, err) == (0, "")
    assert json.loads(out) == {str(files / order[0]): {"pairwise_f1": 1.0}}


def test_text_ids_that_are_not_plain_integers_keep_the_files_apart(cli, files):
    frame = pd.DataFrame({"id": ["007", *map(str, range(8, 27))], "c": CLUSTERS})
    frame.to_csv(files / "z.csv", index=False)
    code, _, err = cli(["metrics", files / "z.csv", files / "x.parquet"])
    assert code == 1
    assert "record ids have different types" in err and "('007')" in err
    assert "--id-type str" in err and "--id-type int" in err


def test_id_type_forces_one_type(cli, files):
    frame = pd.DataFrame({"id": ["007", *map(str, range(2, 21))], "c": CLUSTERS})
    frame.to_csv(files / "z.csv", index=False)
    # as integers, 007 and 7 would be one record: named, not merged
    code, _, err = cli(["metrics", files / "z.csv", files / "x.parquet", "--id-type", "int"])
    assert code == 1 and "make" in err and "'007', '7'" in err
    # as text, 1 (Parquet) and '1' (CSV) are the same record
    code, out, err = cli(
        ["metrics", files / "x.csv", files / "x.parquet", "--id-type", "str", "--format", "json"]
    )
    assert code == 0 and json.loads(out)[str(files / "x.csv")]["pairwise_precision"] == 1.0
    frame = pd.DataFrame({"id": ["a", *map(str, range(2, 21))], "c": CLUSTERS})
    frame.to_csv(files / "a.csv", index=False)
    code, _, err = cli(["metrics", files / "a.csv", files / "x.csv", "--id-type", "int"])
    assert code == 1 and "1 record id(s) are not integers: 'a'" in err


# the prediction is its own reference: the estimate is the sample's value, and the
# command line says so
_OWN_REFERENCE = r"prediction holds only the \d+ reviewed records of the sample"


def test_estimate_and_summary_read_mixed_files_under_the_same_rule(cli, files):
    with pytest.warns(PopulationWarning, match=_OWN_REFERENCE):
        code, out, _ = cli(["estimate", files / "x.csv", "--reference", files / "x.parquet"])
    assert code == 0 and "pairwise_precision" in out
    code, out, _ = cli(["summary", files / "x.csv", files / "x.parquet", "--format", "csv"])
    assert code == 0 and len(out.splitlines()) == 3


def test_plan_reads_mixed_files_under_the_same_rule(cli, files):
    code, out, err = cli(
        ["plan", files / "x.parquet", "--records", "10", "--benchmark", files / "x.csv"]
    )
    assert code == 0, err
    code, _, err = cli(
        ["plan", files / "x.parquet", "--half-width", "0.1", "--pilot", files / "x.csv"]
    )
    assert code == 0, err


# -- F-score names -----------------------------------------------------------------------


def test_parse_fscore_reads_the_names_fscore_name_writes():
    assert parse_fscore("pairwise_f2") == ("pairwise", 2.0)
    assert parse_fscore("bcubed_f0.5") == ("bcubed", 0.5)
    assert parse_fscore("cluster_f.5") == ("cluster", 0.5)
    for name in ("pairwise_fbeta", "pairwise_f0", "pairwise_f-1", "rand_f2", "pairwise_f2x"):
        assert parse_fscore(name) is None


def test_evaluate_computes_fscores_of_any_beta_by_name():
    prediction = pd.Series([1, 1, 2, 2, 3, 3, 3], index=list("abcdefg"))
    truth = pd.Series([1, 1, 1, 2, 3, 3, 4], index=list("abcdefg"))
    table = evaluate(prediction, truth, ["pairwise_f2", "cluster_f0.5", "bcubed_f2"])
    assert list(table.columns) == ["pairwise_f2", "cluster_f0.5", "bcubed_f2"]
    row = table.iloc[0]
    assert row["pairwise_f2"] == pytest.approx(pairwise_fbeta(prediction, truth, beta=2))
    assert row["cluster_f0.5"] == pytest.approx(cluster_fbeta(prediction, truth, beta=0.5))
    assert row["bcubed_f2"] == pytest.approx(bcubed_fbeta(prediction, truth, beta=2))
    # by hand: TP = 2 ({a,b}, {e,f}), |P| = 1 + 1 + 3 = 5, |T| = 3 + 1 = 4; F2 = 5·2/(5·2+4·2+3)
    assert row["pairwise_f2"] == pytest.approx(10 / 21)


def test_estimators_take_pairwise_fscore_names():
    truth = pd.Series(np.arange(60) // 3, index=[f"r{i}" for i in range(60)])
    prediction = truth.copy()
    prediction.iloc[::7] = 99
    sample = benchmark_sample(truth[truth < 10], weights="cluster_size", population_size=60)
    named = estimate(prediction, sample, "pairwise_f2")
    weighted = estimate(prediction, sample, "pairwise_fbeta", beta=2)
    assert named.metric == weighted.metric == "pairwise_f2"
    assert (named.value, named.ci_low, named.ci_high) == (
        weighted.value,
        weighted.ci_low,
        weighted.ci_high,
    )
    table = estimate_table({"p": prediction}, sample, ["pairwise_f2", "pairwise_f1"])
    assert table["metric"].tolist() == ["pairwise_f2", "pairwise_f1"]
    with pytest.raises(ValueError, match="F-score with beta=2, but beta=3 was given"):
        estimate(prediction, sample, "pairwise_f2", beta=3)


def test_the_command_line_takes_the_fscore_names_the_documentation_uses(cli, files):
    code, out, _ = cli(
        ["metrics", files / "x.csv", files / "x.csv", "--metrics", "pairwise_f2", "--format", "csv"]
    )
    assert code == 0 and out.splitlines()[0] == "prediction,pairwise_f2"
    with pytest.warns(PopulationWarning, match=_OWN_REFERENCE):
        code, out, _ = cli(
            [
                "estimate",
                files / "x.csv",
                "--reference",
                files / "x.csv",
                "--metrics",
                "pairwise_f2",
            ]
        )
    assert code == 0 and "pairwise_f2" in out


# -- typo suggestions ---------------------------------------------------------------------


def test_a_mistyped_metric_gets_the_closest_name():
    with pytest.raises(
        ValueError, match=r"'pairwise_precison' \(did you mean 'pairwise_precision'"
    ):
        check_metric_names(["pairwise_precison"], ["pairwise_precision", "pairwise_recall"])
    with pytest.raises(ValueError, match=r"unknown metric\(s\) 'zzz'; choose from"):
        check_metric_names(["zzz"], ["pairwise_precision"])


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["metrcs"], "(did you mean 'metrics'?)"),
        (["metrics", "A", "B", "--metircs", "pairwise_f1"], "(did you mean '--metrics'?)"),
        (["metrics", "A", "B", "--formt=json"], "(did you mean '--format'?)"),
        (["metrics", "A", "B", "--on-missing", "restirct"], "(did you mean 'restrict'?)"),
        (["review", "sttus", "P"], "(did you mean 'status'?)"),
        (["estimate", "A", "--ci-method", "scor"], "(did you mean 'score'?)"),
    ],
)
def test_a_mistyped_flag_command_or_choice_gets_the_closest_name(cli, capsys, argv, suggestion):
    with pytest.raises(SystemExit) as stopped:
        cli(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith(suggestion)


def test_a_mistyped_flag_is_reported_by_its_command(cli, capsys, files):
    with pytest.raises(SystemExit):
        cli(["metrics", files / "x.csv", files / "x.csv", "--metircs", "pairwise_f1"])
    err = capsys.readouterr().err
    assert "usage: er-eval metrics" in err and "er-eval metrics: error: unrecognized" in err


def test_a_mistyped_metric_on_the_command_line_stops_before_reading(cli, tmp_path):
    code, _, err = cli(["metrics", tmp_path / "absent.csv", "x.csv", "--metrics", "pairwise_f12x"])
    assert code == 1 and "(did you mean 'pairwise_f1'?)" in err
    code, _, err = cli(["estimate", tmp_path / "absent.csv", "--metrics", "pairwise_recal"])
    assert code == 1 and "(did you mean 'pairwise_recall'?)" in err
