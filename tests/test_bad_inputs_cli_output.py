"""What the command line prints: one reliability message per estimate, one 'effective'
figure said in words, counts as integers in every format (review status and agreement,
the plan's table), and help text without markup."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from _helpers import all_parsers

from er_evaluation.cli import build_parser
from er_evaluation.errors import PopulationWarning
from er_evaluation.estimators.diagnostics import assess
from er_evaluation.planning import plan_sample_size


@pytest.fixture
def small(tmp_path):
    """A prediction of 20 records in 7 clusters (``x.csv``) and a reference reviewing one
    of its clusters (``one.csv``)."""
    frame = pd.DataFrame({"id": range(1, 21), "c": [i // 3 for i in range(20)]})
    frame.to_csv(tmp_path / "x.csv", index=False)
    frame.head(3).to_csv(tmp_path / "one.csv", index=False)
    return tmp_path / "x.csv"


def test_each_unreliable_estimate_is_said_once(cli, small):
    """One reviewed cluster: no standard error, so no estimate is reliable."""
    code, out, err = cli(["estimate", small, "--reference", small.parent / "one.csv"])
    assert code == 0
    assert "UnreliableEstimateWarning" not in err
    for metric in ("pairwise_precision", "pairwise_recall", "pairwise_f1"):
        assert err.count(f"not reliable: x {metric}:") == 1


def test_the_effective_figure_is_said_in_words_with_one_decimal(cli, small):
    # the prediction is its own reference: the estimate is the sample's value, and said so
    with pytest.warns(PopulationWarning, match="prediction holds only the 20 reviewed records"):
        code, out, err = cli(["estimate", small, "--reference", small])
    assert code == 0
    assert "n_effective: the number of equally weighted reviewed units" in err
    header, *rows = [line for line in out.splitlines() if "pairwise" in line]
    assert all(re.search(r"\s\d+\.\d\s+(True|False)", row) for row in [header, *rows])


def test_reliability_reasons_name_what_each_figure_counts():
    few = assess(0.5, 0.1, n_effective=3.64, top_share=0.8, n_units=6, n_draws=6, level=0.95)
    assert "6 reviewed units, worth 3.6 equally weighted units (n_effective)" in few.reason


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_review_status_and_agreement_print_counts_as_integers(cli, review_project, fmt):
    code, status, _ = cli(["review", "status", review_project, "--format", fmt])
    assert code == 0
    code, agreement, _ = cli(["review", "agreement", review_project, "--format", fmt])
    assert code == 0
    if fmt == "json":
        status, agreement = json.loads(status), json.loads(agreement)
        assert isinstance(status["events"]["value"], int)
        assert isinstance(agreement["double_reviewed"]["value"], int)
        assert isinstance(agreement["link_decisions"]["value"], int)
        assert isinstance(agreement["link_agreement"]["value"], float)
        return
    sep = r"\s+" if fmt == "table" else ","
    for name in ("events", "decisions", "queue_records", "reviewed_records"):
        assert re.search(rf"^{name}{sep}[\d,]+$", status, re.M), name
    for name in ("double_reviewed", "link_decisions"):
        assert re.search(rf"^{name}{sep}[\d,]+$", agreement, re.M), name
    assert re.search(rf"^link_agreement{sep}0\.\d+$", agreement, re.M)


def test_the_plan_table_writes_numbers_as_its_first_line_does():
    prediction = pd.Series(np.arange(3000) // 2, index=np.arange(3000))
    plan = plan_sample_size(prediction, None, 0.05, metric="pairwise_precision", error_rate=0.1)
    lines = plan.summary().splitlines()
    assert "1,500" in lines[3] and "1500 " not in lines[3]


def test_no_help_holds_markup_or_its_line_breaks():
    for parser in all_parsers(build_parser()):
        text = parser.format_help()
        assert not re.search(r"``|:[a-z]+:`|\*\*|\\$|::$|<br>", text, re.M), parser.prog


def test_an_unknown_key_in_interactive_labelling_is_answered_in_the_prompts_words(tmp_path, cli):
    pool = tmp_path / "pool.csv"
    pool.write_text("id_left,id_right,score,predicted\nr1,r2,0.9,1\n")
    labels = tmp_path / "labels.jsonl"
    argv = ["pairs", "sample", pool, "--labels", labels, "--method", "passive", "--budget", 1]
    code, _, err = cli(argv, "x\nm\n")
    assert code == 0, err
    assert "'x' is not an answer: type m (match), n (non-match), u (unsure) or q (quit)" in err
    assert "1 / 0 / None" not in err
