"""The HTML report: what it holds equals what the library computes, the file is one
self-contained page (plotly embedded, no external source), ``er-eval report`` writes it
from files, a review project or the demo, the app offers it, and Chromium renders it."""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import opened_report

from er_evaluation.datasets import load_rldata500
from er_evaluation.estimators import blocking_table, compare, estimate_table
from er_evaluation.io import write_membership
from er_evaluation.report import (
    build_report,
    cluster_errors,
    project_report,
    reliability_words,
    report_figures,
    report_html,
)
from er_evaluation.sampling import sample_records
from er_evaluation.simulation import misattribute

ROOT = Path(__file__).resolve().parents[1]
METRICS = ("pairwise_precision", "pairwise_recall", "pairwise_f1")


@pytest.fixture(scope="module")
def small():
    """Three versions of the RLdata 500 truth (5, 10 and 20% misattributed) and the
    reviewed true clusters of 60 uniformly drawn records."""
    records, truth = load_rldata500()
    versions = {f"v{i}": misattribute(truth, r, seed=i) for i, r in enumerate((0.05, 0.1, 0.2))}
    sample = sample_records(truth, 60, seed=3)
    return records, truth, versions, sample


@pytest.fixture(scope="module")
def report(small):
    records, _, versions, sample = small
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_report(
            versions,
            sample,
            metrics=METRICS,
            records=records,
            fields=("fname_c1", "lname_c1"),
            blocks=records["by"],
        )


def test_estimates_are_the_library_estimates_with_reliability_in_words(small, report):
    _, _, versions, sample = small
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = estimate_table(versions, sample, METRICS, on_missing="restrict")
    got = report.estimates
    assert list(got["prediction"]) == list(expected["prediction"])
    np.testing.assert_allclose(got["value"], expected["value"])
    np.testing.assert_allclose(got["ci_low"], expected["ci_low"])
    for row, words in zip(got.itertuples(), got["reliability"], strict=True):
        if row.reliable:
            half = (row.ci_high - row.ci_low) / 2
            assert words.startswith("Reliable: 95% interval ±") and f"±{half:.3f}" in words
        else:
            assert words == f"Not reliable: {row.reason}"


def test_recall_lost_to_blocking_is_the_library_table(small, report):
    records, _, versions, sample = small
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = blocking_table(versions, sample, records["by"], on_missing="restrict")
    got = report.blocking
    assert list(got["metric"]) == ["blocking_recall", "matching_recall"] * 3
    np.testing.assert_allclose(got["value"], expected["value"])
    np.testing.assert_allclose(got["ci_high"], expected["ci_high"])
    assert "Recall lost to blocking" in report_html(report)
    # keys that miss reviewed records: a note, and the rest of the report
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        partial = build_report(versions, sample, metrics=METRICS, blocks=records["by"].iloc[:10])
    assert partial.blocking is None
    assert any("recall lost to blocking is not shown" in n for n in partial.notes)


def test_reliability_words_hand_cases():
    row = {"reliable": True, "ci_low": 0.8, "ci_high": 0.9, "n_effective": 42.4, "level": 0.95}
    assert reliability_words(row) == (
        "Reliable: 95% interval ±0.050, from a sample worth 42.4 equally weighted units "
        "(n_effective)."
    )
    row = {"reliable": False, "reason": "one reviewed unit: no standard error"}
    assert reliability_words(row) == "Not reliable: one reviewed unit: no standard error"


def test_differences_are_paired_comparisons_of_consecutive_versions(small, report):
    _, _, versions, sample = small
    diffs = report.differences
    assert len(diffs) == 2 * len(METRICS)
    assert list(dict.fromkeys(diffs["prediction"])) == ["v1 - v0", "v2 - v1"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = compare(
            {"v1": versions["v1"], "v2": versions["v2"]},
            sample,
            "pairwise_recall",
            on_missing="restrict",
        ).iloc[0]
    row = diffs[(diffs["prediction"] == "v2 - v1") & (diffs["metric"] == one.metric)].iloc[0]
    assert row["value"] == pytest.approx(one.value)
    assert row["std_error"] == pytest.approx(one.std_error)


def test_a_difference_with_no_reviewed_difference_is_a_note_not_a_python_warning(small):
    """v1 splits one record off a predicted cluster that holds no reviewed record: the two
    versions agree on every reviewed unit, so each paired difference's interval ignores
    the pairing. The report's reader learns it from the notes; nothing goes to the log."""
    _, _, versions, sample = small
    v0 = versions["v0"]
    touched = set(v0[v0.index.isin(sample.reference.index)])
    sizes = v0.value_counts()
    untouched = next(c for c in sizes.index[sizes >= 2] if c not in touched)
    v1 = v0.copy()
    v1[v0.index[v0 == untouched][0]] = v0.max() + 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = build_report({"v0": v0, "v1": v1}, sample, metrics=METRICS)
    assert [str(w.message) for w in caught] == []
    unpaired = [n for n in built.notes if "agree on all" in n]
    assert [n.split(" of ")[0] for n in unpaired] == list(METRICS)
    assert all(
        n.startswith(f"{m} of v1 - v0: the two predictions agree on all ") and n.endswith(").")
        for m, n in zip(METRICS, unpaired, strict=True)
    )
    assert "without their pairing (wide)" in report_html(built)


def test_sample_description_and_truth_statistics(small, report):
    _, _, _, sample = small
    items = dict(zip(report.sample["item"], report.sample["value"], strict=True))
    assert items["reviewed units"] == f"{sample.n_units:,} true clusters"
    assert items["reviewed records"] == f"{sample.n_records:,}"
    assert items["draws"].startswith(f"{sample.n_draws:,} (")
    assert "proportional to their size" in items["selection"]
    assert set(report.truth["metric"]) >= {"average_cluster_size", "matching_rate"}
    assert report.agreement is None and report.strata is None


def test_a_stratified_sample_gets_its_strata_and_their_contributions(small):
    from er_evaluation.estimators import stratum_contributions
    from er_evaluation.review import draw_queue, reviewed_sample

    _, truth, versions, _ = small
    prediction = versions["v1"]
    queue = draw_queue(prediction, design="stratified", size=60, seed=0, take_all_size=5)
    reviewed = truth[truth.isin(truth.loc[queue["record_id"]])]
    sample, _ = reviewed_sample(
        queue, reviewed, design="stratified", prediction=prediction, take_all_size=5
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        built = build_report({"v0": versions["v0"], "v1": prediction}, sample, metrics=METRICS)
        expected = stratum_contributions(
            prediction, sample, "pairwise_recall", on_missing="restrict"
        )
    got = built.strata[built.strata["metric"] == "pairwise_recall"]
    assert set(got.pop("prediction")) == {"v1"}
    got = got.drop(columns="metric")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))
    items = dict(zip(built.sample["item"], built.sample["value"], strict=True))
    drawn = ", ".join(
        f"{name} ({int(n):,} of {int(f):,})"
        for name, n, f in zip(
            sample.strata.names, sample.strata.n_draws, sample.strata.frame_size, strict=True
        )
    )
    assert items["strata"].endswith(drawn)
    assert "strata" in report_figures(built)
    assert "<h2>Contributions of the strata</h2>" in report_html(built)


def test_error_analysis_against_a_hand_case():
    """Truth {a,b,c}, {d,e}, {f}; prediction {a,b,d}, {c}, {e,f}. Reviewed: {a,b,c}
    (main predicted cluster {a,b,d}: d of another entity; c split off) and {d,e} (one
    record in each of {a,b,d} and {e,f}: the tie goes to the smaller, {e,f}, which holds
    f of another entity). Equal extras keep the reviewed clusters' order."""
    truth = pd.Series([1, 1, 1, 2, 2, 3], index=list("abcdef"))
    prediction = pd.Series([10, 10, 20, 10, 30, 30], index=list("abcdef"))
    reviewed = truth[truth.isin([1, 2])]
    errors = cluster_errors(prediction, reviewed, version="p")
    assert errors.over_merged.to_dict("list") == {
        "predicted_cluster": [10, 30],
        "size": [3, 2],
        "true_cluster": [1, 2],
        "overlap": [2, 1],
        "extra": [1, 1],
    }
    assert errors.split["true_cluster"].tolist() == [1, 2]
    assert errors.split["missing"].tolist() == [1, 1]
    merged = errors.records[errors.records["part"] == "over-merged"]
    # the records of other entities come first in each over-merged cluster
    assert merged["record_id"].tolist() == ["d", "a", "b", "f", "e"]
    assert merged["true_cluster"].isna().tolist() == [False, False, False, True, False]


def test_the_html_is_one_self_contained_page_with_at_least_three_figures(report):
    page = report_html(report)
    assert page.startswith("<!DOCTYPE html>")
    assert len(report_figures(report)) >= 3
    assert page.count('class="plotly-graph-div"') == len(report_figures(report))
    assert not re.search(r"<script[^>]*\bsrc=", page)
    assert not re.search(r"<link[^>]*\bhref=", page)
    assert page.count("<script") >= 1 + len(report_figures(report))
    for title in (
        "Estimates across versions",
        "Reliability of each estimate",
        "The reviewed sample",
        "Paired differences between versions",
        "Agreement of double review",
        "Error analysis of v2",
    ):
        assert f"<h2>{title}</h2>" in page


def test_cli_report_from_files(tmp_path, small, cli):
    _, truth, versions, sample = small
    for name, version in versions.items():
        write_membership(version, tmp_path / f"{name}.csv")
    write_membership(sample.reference, tmp_path / "reviewed.csv")
    out = tmp_path / "out.html"
    code, stdout, err = cli(
        ["report", tmp_path / "v0.csv", tmp_path / "v1.csv", "--reference",
         tmp_path / "reviewed.csv", "-o", out, "--title", "Three versions"]
    )  # fmt: skip
    assert code == 0, err
    assert stdout == "" and f"wrote {out}" in err
    page = out.read_text(encoding="utf-8")
    assert "<title>Three versions</title>" in page
    argv = ["report", tmp_path / "v0.csv", "--reference", tmp_path / "reviewed.csv"]
    code, _, err = cli([*argv, "-o", "x.csv"])
    assert code == 1 and "name it *.html" in err


# older releases lack the benchmark's newer records; each estimate says so once per release
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::er_evaluation.errors.CoverageWarning")
def test_report_of_a_review_project(review_project, cli, tmp_path):
    built = project_report(review_project)
    assert built.agreement is not None and built.agreement.n_units == 6
    items = dict(zip(built.sample["item"], built.sample["value"], strict=True))
    assert items["reviewers"] == "ann, bob"
    assert items["finished units"].startswith("6 of 6")
    assert built.estimates["prediction"].nunique() == 15  # a record sample: every version
    assert len(built.differences) == 14 * len(METRICS)
    out = tmp_path / "project.html"
    code, _, err = cli(["report", review_project, "-o", out])
    assert code == 0, err
    assert "<h2>Agreement of double review</h2>" in out.read_text(encoding="utf-8")


@pytest.mark.slow  # the Estimates page on the bundled benchmark, then a report of two versions
def test_the_app_offers_the_report(project):
    from streamlit.testing.v1 import AppTest

    entry = str(ROOT / "er_evaluation" / "app" / "er_eval_app.py")
    at = AppTest.from_file(entry, default_timeout=300).run()
    at.switch_page("views/estimates.py").run()
    at.radio(key="est_source").set_value("benchmark").run()
    at.multiselect(key="est_versions").set_value(["2021-12-30", "2022-06-30"]).run()
    assert not at.exception, [e.value for e in at.exception]
    # the paired difference drops the reviewed records a version lacks, and says so
    assert any("reviewed records absent from a version left out" in c.value for c in at.caption)
    at.button(key="build_report").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    _, page = at.session_state["report"]
    assert page.startswith("<!DOCTYPE html>") and "2022-06-30 - 2021-12-30" in page
    assert "download_report" in at.session_state  # the download button is on the page


@pytest.mark.browser
def test_the_demo_report_renders_in_chromium(tmp_path, chromium):
    """``er-eval report --demo`` in its own process, then the file opened from disk in
    Chromium: no console error, no request beyond the file, every figure drawn."""
    out = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "er_evaluation", "report", "--demo", "-o", str(out)],
        capture_output=True, text=True, timeout=900,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    page = out.read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]*\bsrc=", page)
    figures = page.count('class="plotly-graph-div"')
    assert figures >= 3
    with opened_report(chromium, out, figures) as browser_page:
        # every figure drew its data: markers of the estimates, bars of the other figures
        assert browser_page.locator("#figure-estimates .point").count() >= 15 * 3
        assert browser_page.locator("#figure-errors .point").count() >= 2
