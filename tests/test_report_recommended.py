"""The report of the recommended design (the default road's last step): the version the
design was drawn from carries :func:`~er_evaluation.recommend.estimate_design`'s figures,
the very numbers of ``er-eval review estimate`` and ``er-eval estimate --reference``; the
other versions and the paired differences come from the records drawn for recall; the
page shows the design, its strata, the double review and the error analysis, from the
library, the CLI and in Chromium."""

from __future__ import annotations

import html
import io
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import opened_report

from er_evaluation.designs import TAKE_ALL
from er_evaluation.estimators import compare, estimate_table, stratum_contributions
from er_evaluation.io import write_membership
from er_evaluation.recommend import estimate_design
from er_evaluation.report import build_report, project_report, report_figures, report_html
from er_evaluation.review import Project

METRICS = ["pairwise_precision", "pairwise_recall", "pairwise_f1"]


def quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


@pytest.fixture(scope="module")
def reviewed(recommended_project):
    """The project, its reviewed design sample and its report."""
    folder, _ = recommended_project
    project = Project.open(folder)
    sample, _ = project.sample()
    return project, sample, quiet(lambda: project_report(folder))


def shown_rows(page: str, title: str) -> list[list[str]]:
    """The cells of the first table of the section ``title`` of a report page."""
    section = page.split(f"<h2>{title}</h2>", 1)[1]
    body = section.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [
        [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body)
    ]


def test_the_drawn_version_has_the_figures_of_estimate_design(reviewed):
    project, sample, built = reviewed
    v1 = project.data.predictions["v1"]
    direct = quiet(lambda: estimate_design(v1, sample.precision_of(v1), sample.recall, name="v1"))
    # er-eval review estimate's table is estimate_design's, to the last bit
    pd.testing.assert_frame_equal(quiet(project.estimates), direct)
    got = built.estimates[built.estimates["prediction"] == "v1"].reset_index(drop=True)
    pd.testing.assert_frame_equal(got.drop(columns="reliability"), direct)
    assert list(built.estimates["prediction"].unique()) == ["v1", "v2"]


def test_other_versions_and_differences_come_from_the_records_drawn_for_recall(reviewed):
    project, sample, built = reviewed
    predictions = project.data.predictions
    want = quiet(
        lambda: estimate_table(
            {"v2": predictions["v2"]}, sample.recall, METRICS, on_missing="restrict"
        )
    )
    got = built.estimates[built.estimates["prediction"] == "v2"].reset_index(drop=True)
    pd.testing.assert_frame_equal(got.drop(columns="reliability"), want)
    for metric in METRICS:
        paired = quiet(
            lambda m=metric: compare(
                {"v1": predictions["v1"], "v2": predictions["v2"]}, sample.recall, m
            )
        )
        row = built.differences[built.differences["metric"] == f"{metric} difference"]
        np.testing.assert_array_equal(row["value"].to_numpy(), paired["value"].to_numpy())
        np.testing.assert_array_equal(row["ci_low"].to_numpy(), paired["ci_low"].to_numpy())
    assert any("no take-all part" in note for note in built.notes)


def test_the_design_its_strata_double_review_and_errors_are_shown(reviewed):
    project, sample, built = reviewed
    v1 = project.data.predictions["v1"]
    items = dict(zip(built.sample["item"], built.sample["value"], strict=True))
    strata = sample.precision.strata
    take = int(strata.n_draws[list(strata.names).index(TAKE_ALL)])
    assert items["take-all part"].startswith(f"{take:,} largest predicted clusters")
    assert items["records read"] == f"{sample.n_records:,}"
    assert items["record draws for recall"].startswith(
        f"{sample.recall.n_draws:,} records drawn uniformly"
    )
    for name, n, f in zip(strata.names, strata.n_draws, strata.frame_size, strict=True):
        if name != TAKE_ALL:
            assert f"{name} records: {n:,} of {f:,} predicted clusters" in items["size bands"]
    assert items["drawn from version"] == "v1" and items["reviewers"] == "ann, bob"
    want = stratum_contributions(v1, sample.precision_of(v1), "pairwise_precision")
    pd.testing.assert_frame_equal(built.strata[want.columns], want)
    assert built.agreement is not None and built.agreement.n_units > 0
    assert built.errors is not None and built.errors.version == "v1"
    assert len(built.errors.over_merged) > 0  # 10% misattributed: over-merged clusters
    assert set(report_figures(built)) >= {"estimates", "reliability", "differences", "strata"}


def test_the_design_is_found_among_the_versions_or_refused(reviewed):
    project, sample, _ = reviewed
    predictions = project.data.predictions
    # the version the design was drawn from is found wherever it stands
    built = quiet(lambda: build_report({"v2": predictions["v2"], "v1": predictions["v1"]}, sample))
    assert built.sample.set_index("item").loc["drawn from version", "value"] == "v1"
    with pytest.raises(ValueError, match="pass the prediction it was drawn from"):
        build_report({"v2": predictions["v2"]}, sample)
    with pytest.raises(ValueError, match="'v3', which is not among the versions"):
        build_report(dict(predictions), sample, drawn_from="v3")


def test_cli_reports_a_recommended_project_and_its_export(reviewed, cli, tmp_path):
    project, _, built = reviewed
    out = tmp_path / "project.html"
    code, _, err = cli(["report", project.folder, "-o", out])
    assert code == 0, err
    page = out.read_text(encoding="utf-8")
    code, review_out, err = cli(["review", "estimate", project.folder, "--format", "csv"])
    assert code == 0, err
    review = pd.read_csv(io.StringIO(review_out))
    rows = shown_rows(page, "Estimates across versions")
    shown = [r for r in rows if r[0] == "v1"]
    assert [r[1] for r in shown] == METRICS
    for row, value, low, high in zip(
        shown, review["value"], review["ci_low"], review["ci_high"], strict=True
    ):
        assert row[2:5] == [f"{value:.4f}", f"{low:.4f}", f"{high:.4f}"]
    for title in ("The reviewed sample", "Contributions of the strata", "Error analysis of v1"):
        assert f"<h2>{title}</h2>" in page
    assert "Paired differences between versions" in page

    # the exported benchmark and its design, estimated and reported from files
    bench = tmp_path / "bench.csv"
    code, _, err = cli(["review", "export", project.folder, "-o", bench])
    assert code == 0, err
    write_membership(project.data.predictions["v1"], tmp_path / "v1.csv")
    write_membership(project.data.predictions["v2"], tmp_path / "v2.csv")
    code, estimate_out, err = cli(
        ["estimate", tmp_path / "v1.csv", "--reference", bench, "--format", "csv"]
    )
    assert code == 0, err
    estimated = pd.read_csv(io.StringIO(estimate_out))
    np.testing.assert_array_equal(estimated["value"].to_numpy(), review["value"].to_numpy())
    files = tmp_path / "files.html"
    code, _, err = cli(
        ["report", tmp_path / "v2.csv", tmp_path / "v1.csv", "--reference", bench, "-o", files]
    )
    assert code == 0, err
    rows = shown_rows(files.read_text(encoding="utf-8"), "Estimates across versions")
    assert len(estimated) > 0
    assert [r[2] for r in rows if r[0] == "v1"] == [f"{v:.4f}" for v in estimated["value"]]
    code, _, err = cli(["report", tmp_path / "v2.csv", "--reference", bench, "-o", files])
    assert code == 1 and "pass the prediction it was drawn from" in err
    assert "Traceback" not in err


@pytest.mark.browser
def test_the_recommended_report_renders_in_chromium(reviewed, tmp_path, chromium):
    """The report of the recommended project opened from disk in Chromium: no console
    error, no request beyond the file, every figure drawn."""
    _, _, built = reviewed
    out = tmp_path / "recommended.html"
    out.write_text(report_html(built), encoding="utf-8")
    with opened_report(chromium, out, len(report_figures(built))) as page:
        assert page.locator("#figure-estimates .point").count() >= 2 * 3
        assert page.locator("#figure-strata .point").count() >= 2
        assert page.get_by_role("heading", name="Contributions of the strata").is_visible()
