"""What a newcomer meets on the command line: help without markup, --version, column
names per file, delimiters, number formats, and pair labelling that shows the records."""

from __future__ import annotations

import io
import json
import re

import pandas as pd
import pytest
from _helpers import all_parsers

from er_evaluation import __version__
from er_evaluation.cli import build_parser, main
from er_evaluation.io import write_membership
from er_evaluation.metrics import evaluate

PRED = pd.Series(["p1", "p1", "p1", "p2", "p2", "p3"], index=[f"r{i}" for i in range(6)])
TRUTH = pd.Series(["t1", "t1", "t2", "t2", "t2", "t3"], index=[f"r{i}" for i in range(6)])


def test_every_help_reads_cleanly():
    for parser in all_parsers(build_parser()):
        text = parser.format_help()
        assert not re.search(r":(func|class|mod|data|meth|attr):`|``", text), parser.prog
        assert "usage:" in text


def test_help_lists_choices_and_the_pool_format():
    parser = build_parser()
    estimate = next(p for p in all_parsers(parser) if p.prog.endswith(" estimate"))
    text = estimate.format_help()
    assert "{record,cluster,cluster_block,block,naive}" in text
    assert "interval methods (--ci-method, default" in text and "  auto " in text
    pairs = next(p for p in all_parsers(parser) if p.prog.endswith("pairs sample"))
    assert "id_left,id_right,score,predicted" in pairs.format_help()


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"er-eval {__version__}"


def test_columns_named_per_file(tmp_path, cli):
    pred = tmp_path / "pred.csv"
    pd.DataFrame({"rec": PRED.index, "person": PRED.to_numpy()}).to_csv(pred, index=False)
    ref = tmp_path / "ref.csv"
    pd.DataFrame({"note": "x", "record_id": TRUTH.index, "cluster_id": TRUTH.to_numpy()}).to_csv(
        ref, index=False
    )
    code, out, err = cli(["metrics", pred, f"{ref}:record_id:cluster_id", "--format", "json"])
    assert code == 0, err
    got = json.loads(out)[str(pred)]
    assert got["pairwise_precision"] == evaluate(PRED, TRUTH).iloc[0]["pairwise_precision"]
    # without names, a three-column file is an error naming the file and the two ways out
    code, _, err = cli(["metrics", pred, ref])
    assert code == 1
    assert f"{ref} has 3 column(s) (note, record_id, cluster_id)" in err
    assert f"{ref}:ID_COL:CLUSTER_COL" in err and "--id-col and --cluster-col" in err
    code, _, err = cli(["metrics", pred, f"{ref}:record_id:cluster"])
    assert code == 1 and "no cluster id column 'cluster'" in err


def test_semicolon_file_is_read(tmp_path, cli):
    pred = tmp_path / "pred.csv"
    pred.write_text("id;cluster\n" + "".join(f"{i};{c}\n" for i, c in PRED.items()))
    ref = write_membership(TRUTH, tmp_path / "ref.csv")
    code, out, err = cli(["metrics", pred, ref, "--format", "csv"])
    assert code == 0, err
    assert pd.read_csv(io.StringIO(out)).shape[0] == 1


def test_counts_are_integers_and_proportions_four_decimals(tmp_path, cli):
    pred = write_membership(PRED, tmp_path / "pred.csv")
    ref = write_membership(TRUTH, tmp_path / "ref.csv")
    code, out, _ = cli(["metrics", pred, ref])
    rows = dict(line.rsplit(None, 1) for line in out.splitlines() if len(line.split()) == 2)
    assert re.fullmatch(r"\d\.\d{4}", rows["pairwise_precision"])
    for count in ("true_positive_links", "merge_count", "generalized_merge_distance"):
        assert re.fullmatch(r"[\d,]+", rows[count]), (count, rows[count])
    code, out, _ = cli(["metrics", pred, ref, "--format", "json"])
    values = json.loads(out)[str(pred)]
    assert isinstance(values["true_positive_links"], int)
    assert isinstance(values["generalized_merge_distance"], int)
    exact = evaluate(PRED, TRUTH).iloc[0]
    assert values["pairwise_recall"] == exact["pairwise_recall"]  # full precision


def test_large_counts_have_thousands_separators(cli):
    code, out, _ = cli(["metrics", "--demo", "--metrics", "true_positive_links"])
    assert code == 0
    assert re.search(r"true_positive_links\s+5,421,136$", out, re.MULTILINE)


@pytest.mark.slow
def test_summary_text_table_is_compact(cli):
    code, out, _ = cli(["summary", "--demo"])
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 120
    first = out.splitlines()[2].split()
    assert first[1] == "84,749" and first[4] == "2"  # records, median size


def test_estimate_json_keeps_full_precision_and_integer_counts(cli):
    code, out, _ = cli(
        ["estimate", "--demo", "--metrics", "pairwise_precision", "--format", "json"]
    )
    assert code == 0
    rows = json.loads(out)
    assert all(isinstance(r["n_records"], int) and isinstance(r["n_units"], int) for r in rows)
    assert any(len(repr(r["value"])) > 8 for r in rows)


def test_interactive_labelling_shows_both_records(tmp_path, cli):
    pool = tmp_path / "pool.csv"
    pool.write_text("id_left,id_right,score,predicted\nr1,r2,0.9,1\n")
    records = tmp_path / "records.csv"
    records.write_text("rid,first,last\nr1,Ann,Lee\nr2,Anne,Lee\n")
    labels = tmp_path / "labels.jsonl"
    argv = ["pairs", "sample", pool, "--labels", labels, "--method", "passive", "--budget", 1]
    code, _, err = cli([*argv, "--records", f"{records}:rid"], "m\n")
    assert code == 0, err
    assert re.search(r"first\s+Ann\s+Anne", err)
    assert re.search(r"last\s+=\s+Lee\s+Lee", err)  # '=' marks the agreeing field


def test_docs_show_the_side_by_side_layout_the_command_prints():
    from pathlib import Path

    from er_evaluation.cli.pairs import _side_by_side

    guide = Path(__file__).resolve().parents[1] / "docs" / "guides" / "pair-labelling.md"
    readme = guide.read_text(encoding="utf-8")
    records = pd.DataFrame(
        {"first": ["Ann", "Anne"], "last": ["Lee", "Lee"], "city": ["Paris", "Paris"]},
        index=pd.Index(["r17", "r42"], name="rid"),
    )
    assert _side_by_side(records, "r17", "r42") + "\n" in readme


def test_library_wording_of_a_bad_value_is_put_in_flag_terms():
    from er_evaluation.cli._common import flag_terms

    options = {"half_width": "--half-width", "on_missing": "--on-missing", "level": "--level"}
    assert flag_terms("half_width must be in (0, 1), got -0.05", options) == (
        "--half-width must be in (0, 1), got -0.05"
    )
    assert flag_terms("use on_missing='restrict' to go on", options) == (
        "use --on-missing restrict to go on"
    )
    # names that are no option of the command, and plain words, stay as they are
    assert flag_terms("n_strata must be a whole number >= 1", options) == (
        "n_strata must be a whole number >= 1"
    )
    assert flag_terms("level must be in (0, 1)", options) == "level must be in (0, 1)"


def test_plan_names_the_half_width_flag(cli):
    code, _, err = cli(["plan", "--demo", "--half-width", "-0.05"])
    assert code == 1 and "--half-width must be in (0, 1), got -0.05" in err


def test_a_sampler_parameter_is_named_by_its_flag(tmp_path, cli):
    # the samplers call it n_strata; the command's flag is --strata
    pool = pd.DataFrame(
        {
            "id_left": [f"a{i}" for i in range(20)],
            "id_right": [f"b{i}" for i in range(20)],
            "score": [i / 20 for i in range(20)],
            "predicted": [int(i >= 10) for i in range(20)],
            "label": [int(i >= 12) for i in range(20)],
        }
    )
    pool.to_csv(tmp_path / "pool.csv", index=False)
    argv = ["pairs", "sample", tmp_path / "pool.csv", "--labels", tmp_path / "l.jsonl"]
    code, _, err = cli([*argv, "--oracle", "column:label", "--strata", "0"])
    assert code == 1 and "--strata must be a whole number >= 1, got 0" in err
