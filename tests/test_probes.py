"""Bad input, class by class: every probe ends in an error naming the problem (the
parameter and its value, the file, the column or the ids) or in an explicit warned
policy; none returns a silently wrong number and none reaches the user as a traceback.

The library probes assert the exception type and the words of its message; the CLI
probes (further down) assert exit code 1 and one line on stderr naming the file or flag.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pandas as pd
import pytest

import er_evaluation as ee
from er_evaluation.datasets import load_pool
from er_evaluation.errors import ClusteringError, CoverageError, InputFileError, PopulationWarning
from er_evaluation.estimators import estimate
from er_evaluation.io import read_membership, read_table, write_membership, write_table_atomic
from er_evaluation.metrics import pairwise_precision
from er_evaluation.pairs import LabelOracle, make_sampler, sample_labels
from er_evaluation.sampling import (
    Sample,
    benchmark_sample,
    sample_blocks,
    sample_clusters,
    sample_records,
)

TRUTH = ee.from_clusters([[1, 2, 3], [4, 5], [6, 7], [8], [9, 10, 11, 12]])
PRED = ee.from_clusters([[1, 4], [2, 3], [5], [6, 7, 8], [9, 10], [11, 12]])


# --- a prediction that cannot be the population the sample was drawn from -------------


def test_prediction_cut_to_the_sampled_records_is_an_error_when_the_frame_is_known():
    sample = sample_clusters(TRUTH, 2, seed=1)  # 2 of the 5 true clusters
    cut = PRED[PRED.index.isin(sample.reference.index)]
    with pytest.raises(CoverageError, match=r"holds only the \d+ reviewed records.*5 units"):
        estimate(cut, sample)
    records = sample_records(TRUTH, 4, seed=3)  # frame: the 12 records
    unsampled = PRED.index.difference(records.reference.index)[0]
    with pytest.raises(CoverageError, match="covers 11 records but .* population of 12"):
        estimate(PRED.drop(unsampled), records)


def test_prediction_cut_to_a_benchmark_is_warned_and_a_census_is_not():
    bench = benchmark_sample(TRUTH[TRUTH.isin([0, 1])], weights="uniform")
    with pytest.warns(PopulationWarning, match="holds only the 5 reviewed records"):
        estimate(PRED[PRED.index <= 5], bench)
    census = sample_clusters(TRUTH, 5, replace=False, seed=0)  # every cluster, once
    with warnings.catch_warnings():
        warnings.simplefilter("error", PopulationWarning)
        e = estimate(PRED, census)
    assert e.value == pytest.approx(pairwise_precision(PRED, TRUTH))


# --- parameter bounds at the public boundary ------------------------------------------


@pytest.mark.parametrize("n", [2.5, 0, -1, True, "3", float("nan")])
@pytest.mark.parametrize("draw", ["records", "clusters", "blocks"])
def test_sample_sizes_must_be_whole_positive_numbers(draw, n):
    blocks = pd.Series(np.where(TRUTH.index <= 5, "b1", "b2"), index=TRUTH.index)
    blocks[TRUTH.index >= 9] = "b3"
    call = {
        "records": lambda: sample_records(TRUTH, n),
        "clusters": lambda: sample_clusters(TRUTH, n),
        "blocks": lambda: sample_blocks(TRUTH, blocks, n),
    }[draw]
    with pytest.raises(ValueError, match=r"^n must be a whole number >= 1, got "):
        call()


def test_integral_float_sample_size_is_accepted():
    assert sample_clusters(TRUTH, 3.0, seed=0).n_draws == 3


@pytest.mark.parametrize("value", [1.7, 0, np.nan])
def test_multiplicities_are_whole_numbers_never_truncated(value):
    units = pd.Index(TRUTH.unique())
    multiplicity = pd.Series(2.0, index=units)
    multiplicity.iloc[1] = value
    with pytest.raises(ValueError, match=r"multiplicity must be a whole number >= 1.*: 1 with"):
        benchmark_sample(TRUTH, multiplicity=multiplicity)
    with pytest.raises(ValueError, match="multiplicity must be a whole number"):
        Sample(
            reference=TRUTH,
            units=units,
            multiplicity=multiplicity.to_numpy(),
            probability=np.ones(len(units)),
            design="clusters",
            weights="uniform",
            replace=True,
        )


def test_integral_multiplicities_are_kept():
    units = pd.Index(TRUTH.unique())
    sample = benchmark_sample(TRUTH, multiplicity=pd.Series(2.0, index=units))
    assert sample.multiplicity.dtype == np.int64 and sample.n_draws == 10


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ci_method": "bca", "n_boot": 1}, r"ci_method='bca' at level 0.95 needs n_boot >= 200"),
        ({"ci_method": "percentile", "n_boot": 0}, r"n_boot must be a whole number >= 1, got 0"),
        ({"ci_method": "percentile", "n_boot": 150}, r"needs n_boot >= 200"),
        ({"ci_method": "studentized", "n_boot": 500, "level": 0.99}, r"needs n_boot >= 1,000"),
        ({"ci_method": "normal", "n_boot": 2.5}, r"n_boot must be a whole number"),
        ({"level": 1.5}, r"level must be in \(0, 1\)"),
        ({"level": 0}, r"level must be in \(0, 1\)"),
        ({"level": float("nan")}, r"level must be a finite number"),
    ],
)
def test_interval_parameters_are_checked(kwargs, message):
    sample = sample_clusters(TRUTH, 4, seed=1)
    with pytest.raises(ValueError, match=message):
        estimate(PRED, sample, **kwargs)


def test_enough_bootstrap_replicates_give_an_interval_around_the_estimate():
    sample = sample_clusters(TRUTH, 4, seed=1)
    for method in ("bca", "percentile"):
        e = estimate(PRED, sample, ci_method=method, n_boot=200)
        assert e.ci_method == method and e.ci_low <= e.value <= e.ci_high


@pytest.fixture(scope="module")
def restaurant():
    return load_pool("restaurant")


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("oasis", {"epsilon": 0}, r"epsilon must be in \(0, 1\], got 0"),
        ("importance", {"epsilon": 1.5}, r"epsilon must be in \(0, 1\], got 1.5"),
        ("oasis", {"beta": -2}, r"beta must be a positive finite number"),
        ("importance", {"target": "f2"}, r"target must be one of"),
        ("oasis", {"n_strata": 2.5}, r"n_strata must be a whole number >= 1, got 2.5"),
        ("stratified", {"n_strata": 0}, r"n_strata must be a whole number >= 1, got 0"),
        ("stratified", {"epsilon": 0.1}, r"'stratified' has no parameter epsilon; its parameters"),
    ],
)
def test_pair_sampler_parameters_are_checked(restaurant, method, params, message):
    with pytest.raises(ValueError, match=message):
        make_sampler(method, restaurant, seed=0, **params)


def test_label_budget_is_a_whole_number(restaurant):
    sampler = make_sampler("passive", restaurant, seed=0)
    with pytest.raises(ValueError, match="budget must be a whole number >= 0, got 2.5"):
        sample_labels(restaurant, sampler, LabelOracle(restaurant.labels), budget=2.5)


# --- ids that floating point cannot hold ------------------------------------------------


def test_float_ids_beyond_2_53_are_an_error_not_a_duplicate(tmp_path):
    ids = np.array([2**53, 2**53 + 1, 5], dtype=np.int64)
    frame = pd.DataFrame({"id": ids.astype(float), "cluster": [1, 1, 2]})
    frame.to_parquet(tmp_path / "big.parquet")
    with pytest.raises(
        ClusteringError, match=r"big\.parquet: record ids are floating-point .* 2\*\*53"
    ):
        read_membership(tmp_path / "big.parquet")
    clusters = pd.Series(ids.astype(float), index=["a", "b", "c"])
    with pytest.raises(ClusteringError, match="cluster ids are floating-point"):
        ee.membership(clusters)
    # as integers (or strings) the same ids are distinct and valid
    pd.DataFrame({"id": ids, "cluster": [1, 1, 2]}).to_parquet(tmp_path / "int.parquet")
    assert read_membership(tmp_path / "int.parquet").index.is_unique


# --- files: reading ----------------------------------------------------------------------


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("empty.csv", b"", r"empty\.csv: the file is empty"),
        (
            "latin.csv",
            "id,c\na,1\nJos\xe9,1\n".encode("latin-1"),
            r"latin\.csv: not utf-8 text \(byte 0xe9 on line 3\)",
        ),
        (
            "extra.csv",
            b"id,c\na,1\nb,1,zz\nc,2\n",
            r"extra\.csv: malformed CSV \(Expected 2 fields in line 3, saw 3\)",
        ),
        (
            "allextra.csv",
            b"id,c\na,1,x\nb,1,y\n",
            r"allextra\.csv: data rows have more fields than the header",
        ),
        ("c.xlsx", b"id,c\na,1\n", r"c\.xlsx: unknown file type \(\.xlsx\)"),
        ("noext", b"id,c\na,1\n", r"noext: unknown file type \(no extension\)"),
        ("fake.parquet", b"id,c\na,1\n", r"fake\.parquet: cannot read as Parquet"),
    ],
)
def test_unreadable_files_are_named(tmp_path, name, data, message):
    path = _write(tmp_path / name, data)
    with pytest.raises(InputFileError, match=message):
        read_table(path)


def test_a_row_with_extra_fields_is_never_read_as_an_index(tmp_path):
    path = _write(tmp_path / "c.csv", b"id,c\na,1,x\nb,1,y\n")
    with pytest.raises(InputFileError):
        read_membership(path)


@pytest.mark.parametrize("delimiter", [";", "\t", "|"])
def test_other_delimiters_in_a_csv_are_recognised(tmp_path, delimiter):
    text = delimiter.join(["id", "c"]) + "\n" + delimiter.join(["a", "1"]) + "\n"
    path = _write(tmp_path / "c.csv", text.encode())
    assert read_membership(path).to_dict() == {"a": "1"}


def test_directories_are_named(tmp_path):
    folder = tmp_path / "looks.csv"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match="is a directory, not a file") as info:
        read_membership(folder)
    assert info.value.filename == str(folder)
    with pytest.raises(IsADirectoryError) as info:
        write_membership(TRUTH, folder)
    assert info.value.filename == str(folder)


# --- files: writing ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["out.xlsx", "out.json", "out"])
def test_unknown_output_types_are_refused_not_written_as_csv(tmp_path, name):
    with pytest.raises(InputFileError, match="unknown file type"):
        write_membership(TRUTH, tmp_path / name)
    assert not (tmp_path / name).exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_is_named(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(PermissionError) as info:
            write_table_atomic(pd.DataFrame({"a": [1]}), folder / "t.csv")
        assert info.value.filename == str(folder)
    finally:
        folder.chmod(0o700)


def test_unwritable_folder_is_named_not_the_temporary_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError) as info:  # a file where a folder should be
        write_table_atomic(pd.DataFrame({"a": [1]}), blocker / "sub" / "t.csv")
    assert ".tmp" not in str(info.value) and str(blocker) in str(info.value.filename)


def test_permission_denied_names_the_folder(tmp_path, monkeypatch):
    # root ignores folder permissions, so the refusal is simulated where it happens
    def refuse(dir, prefix, suffix):
        raise PermissionError(13, "Permission denied", f"{dir}/{prefix}xyz{suffix}")

    monkeypatch.setattr("er_evaluation.io.tempfile.mkstemp", refuse)
    with pytest.raises(PermissionError) as info:
        write_membership(TRUTH, tmp_path / "out.csv")
    assert info.value.filename == str(tmp_path)
    assert "Permission denied" in str(info.value) and ".tmp" not in str(info.value)


# --- the command line: one line naming the file or the flag, exit code 1 ----------------


def _one_line_error(err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and lines[0].startswith("er-eval ")
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture
def clustering_files(tmp_path):
    pred = write_membership(PRED, tmp_path / "pred.csv")
    ref = write_membership(TRUTH, tmp_path / "ref.csv")
    return pred, ref


def test_cli_input_that_is_a_directory(tmp_path, clustering_files, cli):
    _, ref = clustering_files
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    code, _, err = cli(["metrics", folder, ref])
    assert code == 1
    _one_line_error(err, str(folder), "is a directory")


def test_cli_output_into_a_directory(tmp_path, clustering_files, cli):
    pred, ref = clustering_files
    code, _, err = cli(["metrics", pred, ref, "-o", tmp_path])
    assert code == 1
    _one_line_error(err, str(tmp_path), "directory")


def test_cli_unreadable_inputs_name_the_file(tmp_path, clustering_files, cli):
    _, ref = clustering_files
    cases = {
        "empty.csv": (b"", "the file is empty"),
        "latin.csv": ("id,c\nJos\xe9,1\n".encode("latin-1"), "not utf-8 text"),
        "extra.csv": (b"id,c\na,1\nb,1,x\n", "malformed CSV"),
        "c.xlsx": (b"id,c\na,1\n", "unknown file type"),
    }
    for name, (data, words) in cases.items():
        path = _write(tmp_path / name, data)
        code, _, err = cli(["metrics", path, ref])
        assert code == 1
        _one_line_error(err, str(path), words)
    code, _, err = cli(["metrics", tmp_path / "absent.csv", ref])
    _one_line_error(err, "absent.csv: no such file")


def test_cli_speaks_in_flags_not_python_keywords(tmp_path, clustering_files, cli):
    pred, _ = clustering_files
    partial = write_membership(TRUTH.iloc[:6], tmp_path / "partial.csv")
    code, _, err = cli(["metrics", pred, partial])
    assert code == 1
    _one_line_error(err, "--on-missing restrict")
    assert "on_missing" not in err


def test_cli_traceback_flag_shows_the_python_error(tmp_path, cli):
    with pytest.raises(FileNotFoundError):
        cli(["--traceback", "metrics", tmp_path / "a.csv", tmp_path / "b.csv"])


@pytest.mark.parametrize("metric", ["pairwise_fbeta", "pairwise_f1", "bcubed_f1"])
@pytest.mark.parametrize("beta", [-1, 0, float("nan"), float("inf")])
def test_beta_must_be_positive_and_finite(metric, beta):
    sample = sample_clusters(TRUTH, 3, seed=1)
    with pytest.raises(ValueError, match="beta must be a positive finite number"):
        estimate(PRED, sample, metric, beta=beta)


def test_float_pair_ids_beyond_2_53_are_an_error_not_a_self_pair():
    from er_evaluation.pairs import PairPool
    from er_evaluation.pairs.pool import PoolError

    frame = pd.DataFrame(
        {
            "id_left": [float(2**53), 1.0],
            "id_right": [float(2**53 + 1), 3.0],
            "score": [0.5, 0.2],
            "predicted": [1, 0],
        }
    )
    with pytest.raises(PoolError, match="id_left are floating-point numbers"):
        PairPool.from_frame(frame)


def test_float_ids_beyond_2_53_in_pairs_are_an_error():
    big = [float(2**53), float(2**53 + 1)]
    with pytest.raises(ClusteringError, match="pair ids are floating-point"):
        ee.from_pairs([(big[0], 1.0), (big[1], 2.0)])
    with pytest.raises(ClusteringError, match="record ids are floating-point"):
        ee.from_pairs([], records=big)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["-o", "out.parquet"], "er-eval writes text"),
        (["-o", "out.xlsx", "--format", "csv"], "er-eval writes text"),
        (["-o", "out.csv", "--format", "json"], "names a CSV file but --format is json"),
    ],
)
def test_cli_output_name_must_match_the_format(tmp_path, clustering_files, cli, argv, words):
    pred, ref = clustering_files
    argv = [str(tmp_path / a) if a.startswith("out.") else a for a in argv]
    code, _, err = cli(["metrics", pred, ref, *argv])
    assert code == 1
    _one_line_error(err, words)
    assert not any(p.name.startswith("out.") for p in tmp_path.iterdir())


def test_cli_output_format_follows_the_file_name(tmp_path, clustering_files, cli):
    pred, ref = clustering_files
    code, _, err = cli(["metrics", pred, ref, "-o", tmp_path / "m.json"])
    assert code == 0, err
    assert json.loads((tmp_path / "m.json").read_text())[str(pred)]["pairwise_precision"] >= 0
    code, _, err = cli(["metrics", pred, ref, "-o", tmp_path / "m.csv"])
    assert pd.read_csv(tmp_path / "m.csv").shape[0] == 1


@pytest.mark.slow
def test_cli_warnings_are_one_line_each_without_source_locations(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    # a prediction holding only the reviewed records of a benchmark: a PopulationWarning
    reviewed = TRUTH[TRUTH.isin([0, 1])]
    ref = write_membership(reviewed, tmp_path / "reviewed.csv")
    cut = write_membership(PRED[PRED.index <= 5], tmp_path / "cut.csv")
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run(
        [sys.executable, "-m", "er_evaluation", "estimate", str(cut), "--reference", str(ref)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "PopulationWarning" in line]
    assert lines and all(line.startswith("er-eval estimate: PopulationWarning: ") for line in lines)
    assert ".py:" not in result.stderr
