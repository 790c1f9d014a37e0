"""AppTest of the planner on the Sample page: the design it plans (predicted clusters for
precision, records for recall), the answer in the right unit, and its assumptions (design
and variance source) printed beside it, equal to the library's plan."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402
from test_app_designs import ENTRY, V1, project  # noqa: E402,F401  (fixture)

from er_evaluation.designs import SIZE_BANDS, TAKE_ALL, size_strata  # noqa: E402
from er_evaluation.planning import plan_review, plan_sample_size  # noqa: E402


def _plan(metric: str, design: str = "auto") -> AppTest:
    at = AppTest.from_file(ENTRY, default_timeout=120).run()
    at.switch_page("views/sample.py").run()
    at.selectbox(key="sample_version").set_value("v1").run()
    at.number_input(key="plan_half_width").set_value(0.1)
    at.selectbox(key="plan_metric").set_value(metric)
    at.radio(key="plan_design").set_value(design)
    at.number_input(key="plan_take_all").set_value(4)
    at.button(key="plan_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


@pytest.mark.usefixtures("project")
def test_precision_is_planned_on_predicted_clusters():
    at = _plan("pairwise_precision")
    strata = size_strata(V1, SIZE_BANDS, take_all_size=4)
    expected = plan_sample_size(
        V1, strata, 0.1, error_rate=0.05, take_all=[TAKE_ALL] if (strata == TAKE_ALL).any() else []
    )
    assert expected.design == "predicted_clusters"
    # the page plans through the library's one assembly, as er-eval plan does
    assembled = plan_review(V1, 0.1, error_rate=0.05, take_all_size=4)
    assert assembled.table["draws"].tolist() == expected.table["draws"].tolist()
    text = " ".join(m.value for m in at.markdown)
    assert f"**{expected.n_draws:,} predicted clusters**" in text
    assert "design: predicted clusters drawn without replacement" in text
    assert "variance source: stratum standard deviations misattribution model" in text
    shown = next(d.value for d in at.dataframe if "sd" in d.value)
    assert shown["draws"].tolist() == expected.table["draws"].tolist()


@pytest.mark.usefixtures("project")
def test_recall_is_planned_on_records():
    at = _plan("pairwise_recall")
    expected = plan_sample_size(V1, None, 0.1, metric="pairwise_recall", error_rate=0.05)
    text = " ".join(m.value for m in at.markdown)
    assert f"**{expected.n_draws:,} sampled records**" in text
    assert "design: records drawn without replacement" in text
    assert "binomial model: a true cluster of s records" in text


@pytest.mark.usefixtures("project")
def test_the_recommended_design_comes_first_with_its_cost():
    """The Sample page's first section recommends the library's design for a budget of
    records, prints its summary and offers the records to review."""
    from er_evaluation.recommend import recommend_design

    at = AppTest.from_file(ENTRY, default_timeout=120).run()
    at.switch_page("views/sample.py").run()
    at.number_input(key="recommend_records").set_value(10)
    at.selectbox(key="recommend_version").set_value("v1")
    at.button(key="recommend_button").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    bench = at.checkbox(key="recommend_benchmark").value
    assert not bench  # the test project has no benchmark
    expected = recommend_design(V1, records=10)
    assert any(t.value == expected.summary() for t in at.text)
