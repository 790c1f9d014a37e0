"""AppTest of the stratified and change-focused designs: draw on the Sample page, review
every queued record, and check the Estimates page (estimates, per-stratum contributions,
paired differences) against the library on the same sample; the planner on the Sample
page prints its assumptions."""

from __future__ import annotations

import io
import os
import warnings
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402
from test_app_designs import (  # noqa: E402
    ENTRY,
    V1,
    V2,
    expected,
    project,  # noqa: E402,F401  (fixture)
    review_everything,
)

from er_evaluation.designs import changed_records, size_strata, stratified_sample  # noqa: E402
from er_evaluation.estimators.change import compare_changed  # noqa: E402


def _draw(design: str, size: int, **extra) -> AppTest:
    at = AppTest.from_file(ENTRY, default_timeout=120).run()
    at.switch_page("views/sample.py").run()
    at.radio(key="sample_design").set_value(design).run()
    at.number_input(key="sample_size").set_value(size)
    at.selectbox(key="sample_version").set_value("v1").run()
    if "take_all" in extra:
        at.number_input(key="sample_take_all").set_value(extra["take_all"])
    if "other" in extra:
        at.selectbox(key="sample_other_version").set_value(extra["other"])
    at.button(key="draw_sample").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def _folder() -> Path:
    return Path(os.environ["ER_EVAL_PROJECT_DIR"])


def _sample(folder, truth, frame_sizes):
    queue = pd.read_parquet(folder / "queue.parquet")
    drawn = pd.Series(queue["stratum"].to_numpy(), index=queue["record_id"].to_numpy())
    return stratified_sample(truth, drawn, frame_sizes)


@pytest.mark.slow
@pytest.mark.usefixtures("project")
def test_stratified_design_estimates_and_per_stratum_contributions():
    folder = _folder()
    at = _draw("stratified", 4, take_all=4)
    queue = pd.read_parquet(folder / "queue.parquet")
    t_records = set(V1.index[V1 == "t"])  # the only predicted cluster with 4 records
    assert t_records <= set(queue["record_id"])
    assert (queue.set_index("record_id").loc[sorted(t_records), "stratum"] == "take-all").all()
    assert len(queue) == 4 + 4
    store = review_everything(folder)
    sample = _sample(folder, store.true_clusters(), size_strata(V1, take_all_size=4).value_counts())
    assert sample.strata.take_all.tolist() == [n == "take-all" for n in sample.strata.names]
    at.switch_page("views/estimates.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    tables = [d.value for d in at.dataframe]
    shown = next(t for t in tables if "prediction" in t).set_index(["prediction", "metric"])[
        "value"
    ]
    pd.testing.assert_series_equal(shown, expected(sample))
    parts = next(t for t in tables if "variance_share" in t)
    assert set(parts["stratum"]) == set(sample.strata.names)
    assert parts.set_index("stratum").loc["take-all", "variance_share"] == 0


@pytest.mark.usefixtures("project")
def test_change_design_shows_the_paired_precision_difference(cli):
    folder = _folder()
    at = _draw("change", 3, other="v2")
    queue = pd.read_parquet(folder / "queue.parquet")
    assert (queue["stratum"] == "changed").all() and len(queue) == 3
    store = review_everything(folder)
    changed = changed_records(V1, V2)
    sample = _sample(folder, store.true_clusters(), pd.Series({"changed": int(changed.sum())}))
    at.switch_page("views/estimates.py").run()
    assert not at.exception, [e.value for e in at.exception]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = compare_changed(V1, V2, sample, None, "pairwise_precision")
    # |P_v1| = |P_v2| = 10: the precision difference needs no benchmark; recall and F1 do
    assert at.metric[0].value == f"{d.value:+.3f}"
    assert any("needs a benchmark" in i.value for i in at.info)
    # the CLI gives the same difference, never level estimates over changed records only
    code, out, err = cli(["review", "estimate", folder, "--format", "csv"])
    assert code == 0, err
    table = pd.read_csv(io.StringIO(out)).set_index("metric")
    assert list(table.index) == ["pairwise_precision difference"]
    assert table.loc["pairwise_precision difference", "value"] == pytest.approx(d.value, abs=1e-12)
    assert "pairwise_recall" in err and "needs a benchmark" in err
    code, _, err = cli(["review", "estimate", folder, "--versions", "v1"])
    assert code != 0 and "only the difference" in err


@pytest.mark.usefixtures("project")
def test_planner_on_the_sample_page_prints_its_assumptions():
    at = AppTest.from_file(ENTRY, default_timeout=120).run()
    at.switch_page("views/sample.py").run()
    at.number_input(key="plan_half_width").set_value(0.1)
    at.button(key="plan_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    plan = next(d.value for d in at.dataframe if "sd" in d.value)
    assert plan["draws"].sum() >= 1
    assert any("Assumptions" in m.value for m in at.markdown)
    assert any("assumed misattribution rate" in m.value for m in at.markdown)
