"""AppTest of the project, estimates, compare and pair-labelling pages: the numbers shown
equal the library's results, and what the pages save is on disk."""

from __future__ import annotations

import base64
import json
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("streamlit")
from _helpers import ENTRY, write_files_project  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from er_evaluation import datasets  # noqa: E402
from er_evaluation.error_analysis import (  # noqa: E402
    predicted_cluster_errors,
    reference_cluster_errors,
)
from er_evaluation.estimators import blocking_table, compare, estimate_table  # noqa: E402
from er_evaluation.estimators.diagnostics import effective_words  # noqa: E402
from er_evaluation.estimators.results import SHOWN_COLUMNS, unreliable_notes  # noqa: E402
from er_evaluation.metrics import evaluate  # noqa: E402
from er_evaluation.pairs import LabellingSession  # noqa: E402
from er_evaluation.review import ReviewStore  # noqa: E402
from er_evaluation.sampling import benchmark_sample  # noqa: E402
from er_evaluation.summary import summary_table  # noqa: E402

TWO = ["2021-12-30", "2022-06-30"]


def open_page(page: str | None = None, **state) -> AppTest:
    at = AppTest.from_file(ENTRY, default_timeout=180).run()
    for key, value in state.items():
        at.session_state[key] = value
    if page:
        at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


# -- project / data ------------------------------------------------------------------------


@pytest.mark.slow
def test_project_page_shows_the_bundled_data(project, predictions):
    at = open_page("project")
    assert metric(at, "Records") == f"{len(datasets.load_patentsview_mentions()):,}"
    assert metric(at, "Versions") == str(len(predictions))
    assert metric(at, "Benchmark records") == f"{len(datasets.load_patentsview_benchmark()):,}"
    versions = at.dataframe[-1].value
    assert list(versions["version"]) == list(predictions)
    assert list(versions["records"]) == [len(p) for p in predictions.values()]


def write_own_files(folder: Path, bad_id: bool = False) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    records = pd.DataFrame(
        {
            "rid": ["r1", "r2", "r3", "r4", "r5"],
            "name": ["Ann Lee", "Ann Lee", "A. Lee", "Bo Chen", "Bo Chen"],
            "blk": ["lee", "lee", "lee", "chen", "chen"],
        }
    )
    wide = pd.DataFrame(
        {
            "rid": ["r1", "r2", "r3", "r4", "r9" if bad_id else "r5"],
            "v1": ["a", "a", "b", "c", "c"],
            "v2": ["a", "a", "a", "c", None],  # r5 outside v2's population
        }
    )
    bench = pd.DataFrame({"rid": ["r1", "r2", "r3"], "truth": ["x", "x", "y"]})
    paths = {
        "records": folder / "records.csv",
        "wide": folder / "wide.csv",
        "bench": folder / "b.csv",
    }
    records.to_csv(paths["records"], index=False)
    wide.to_csv(paths["wide"], index=False)
    bench.to_csv(paths["bench"], index=False)
    return paths


def fill_own_files(at: AppTest, paths: dict[str, Path]) -> AppTest:
    at.radio(key="source").set_value("My own files").run()
    at.text_input(key="records_path").set_value(str(paths["records"])).run()
    at.selectbox(key="records_id_col").set_value("rid")
    at.selectbox(key="records_block_col").set_value("blk").run()
    at.text_input(key="pred_path").set_value(str(paths["wide"])).run()
    at.selectbox(key="pred_id_col").set_value("rid").run()
    at.multiselect(key="pred_version_cols").set_value(["v1", "v2"])
    at.text_input(key="bench_path").set_value(str(paths["bench"])).run()
    at.selectbox(key="bench_id_col").set_value("rid")
    at.selectbox(key="bench_cluster_col").set_value("truth").run()
    at.button(key="save_project").click().run()
    return at


@pytest.mark.slow
def test_project_page_loads_own_files_and_saves_the_project(project, tmp_path):
    at = open_page("project")
    at = fill_own_files(at, write_own_files(tmp_path / "inputs"))
    assert not at.exception
    assert [s.value for s in at.success] == ["Project saved."]
    config = json.loads((project / "project.json").read_text())
    assert config["source"] == "files"
    assert config["records"]["id_col"] == "rid" and config["records"]["block_col"] == "blk"
    assert config["predictions"]["version_cols"] == ["v1", "v2"]
    assert metric(at, "Records") == "5"
    assert metric(at, "Versions") == "2"
    assert metric(at, "Benchmark records") == "3"
    versions = at.dataframe[-1].value
    assert list(versions["records"]) == [5, 4]  # an empty cell = outside that version
    assert list(versions["clusters"]) == [3, 2]


@pytest.mark.slow
def test_project_page_shows_validation_errors_in_plain_words(project, tmp_path):
    at = open_page("project")
    at = fill_own_files(at, write_own_files(tmp_path / "inputs", bad_id=True))
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "'r9'" in errors[0] and "not in the records" in errors[0]
    assert not (project / "project.json").exists() or (
        json.loads((project / "project.json").read_text())["source"] == "demo"
    )


# -- estimates -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::er_evaluation.errors.CoverageWarning")
def test_estimates_from_the_bundled_benchmark_match_the_library(project, predictions):
    at = open_page("estimates", est_versions=TWO)
    at.radio(key="est_source").set_value("benchmark").run()
    assert not at.exception
    sample = benchmark_sample(datasets.load_patentsview_benchmark(), weights="cluster_size")
    expected = quiet(
        estimate_table, {v: predictions[v] for v in TWO}, sample, on_missing="restrict"
    ).set_index(["prediction", "metric"])
    for label, name in (
        ("Pairwise precision", "pairwise_precision"),
        ("Pairwise recall", "pairwise_recall"),
        ("Pairwise F1", "pairwise_f1"),
    ):
        assert metric(at, label) == f"{expected.loc[('2022-06-30', name), 'value']:.3f}"
    shown = at.dataframe[-1].value.set_index(["prediction", "metric"])
    pd.testing.assert_series_equal(shown["value"], expected["value"])
    assert set(shown["estimator"]) == {"cluster_block", "record", "cluster_block+record"}
    assert at.get("plotly_chart"), "the error-bar chart is missing"
    diff = quiet(
        compare,
        {"2022-06-30": predictions["2022-06-30"], "2021-12-30": predictions["2021-12-30"]},
        sample,
        "pairwise_precision",
        baseline="2021-12-30",
        on_missing="restrict",
    ).iloc[0]
    assert metric(at, "Pairwise precision: 2022-06-30 − 2021-12-30") == f"{diff.value:+.3f}"
    # the mentions' name blocks: the recall lost to blocking of the version in focus
    blocks = datasets.load_patentsview_mentions()["block"]
    blocking = quiet(
        blocking_table,
        {"2022-06-30": predictions["2022-06-30"]},
        sample,
        blocks,
        on_missing="restrict",
    ).set_index("metric")
    for label, name in (
        ("Blocking recall", "blocking_recall"),
        ("Matching recall", "matching_recall"),
    ):
        assert metric(at, label) == f"{blocking.loc[name, 'value']:.3f}"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::er_evaluation.errors.CoverageWarning")
@pytest.mark.parametrize(
    "reviews, unreliable",
    [(3, 0), (1, 3)],  # one reviewed record: no standard error, every estimate flagged
)
def test_estimates_follow_the_reviews(project, predictions, reviews, unreliable):
    at = open_page()  # the demo draws its default sample on first open
    queue = pd.read_parquet(project / "queue.parquet")
    newest = predictions["2022-06-30"]
    store = ReviewStore(project / "reviews.sqlite")
    for i, record in enumerate(queue["record_id"].iloc[:reviews]):
        shown = list(newest.index[newest == newest[record]])
        removed = [r for r in shown if r != record][:1] if i == 1 else []
        store.record_review(
            reviewer="ann",
            sampled_record=record,
            predicted_cluster=newest[record],
            shown_records=shown,
            removed=removed,
            version="2022-06-30",
        )
    at.session_state["est_versions"] = TWO
    at.switch_page("views/estimates.py").run()
    assert not at.exception
    truth = store.true_clusters()
    sampled = queue["record_id"][queue["record_id"].isin(truth.index)]
    draws = truth.loc[sampled].value_counts()
    sample = benchmark_sample(
        truth[truth.isin(draws.index)],
        weights="cluster_size",
        multiplicity=draws,
        replace=False,
        population_size=len(newest),
        design="records",
    )
    expected = quiet(
        estimate_table, {v: predictions[v] for v in TWO}, sample, on_missing="restrict"
    ).set_index(["prediction", "metric"])
    assert (
        metric(at, "Pairwise precision")
        == f"{expected.loc[('2022-06-30', 'pairwise_precision'), 'value']:.3f}"
    )
    assert (
        metric(at, "Pairwise recall")
        == f"{expected.loc[('2022-06-30', 'pairwise_recall'), 'value']:.3f}"
    )
    shown = at.dataframe[-1].value
    # the columns of every estimate output, the same figures as the library's
    assert list(shown.columns) == ["prediction", "metric", *SHOWN_COLUMNS]
    want = expected.reset_index()[["prediction", "metric", *SHOWN_COLUMNS]]
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), want, check_dtype=False)
    # one effective figure, said in words as in the table, and one message per estimate
    focus = expected.loc[at.selectbox(key="est_focus").value]
    phrase = r"n = \d+ draws, worth [\d.,]+ equally weighted units \(n_effective\)"
    said = [re.search(phrase, c.value) or c for c in at.caption if "equally weighted" in c.value]
    assert sorted(m.group() if isinstance(m, re.Match) else m.value for m in said) == sorted(
        f"n = {r.n_draws} draws, {effective_words(r.n_effective)}" for r in focus.itertuples()
    )
    messages = [w.value for w in at.warning if w.value.startswith("not reliable")]
    focus = focus.reset_index().assign(prediction=at.selectbox(key="est_focus").value)
    assert len(messages) == unreliable
    assert sorted(messages) == sorted(unreliable_notes(focus))


# -- compare versions ----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::er_evaluation.errors.CoverageWarning")
def test_compare_page_counts_splits_and_merges_like_the_library(project, predictions):
    at = open_page("compare", cmp_versions=TWO)
    assert not at.exception
    old, new = predictions[TWO[0]], predictions[TWO[1]]
    split = quiet(reference_cluster_errors, new, old, on_missing="restrict")
    merged = quiet(predicted_cluster_errors, new, old, on_missing="restrict")
    n_split = int((split["n_predicted_clusters"] > 1).sum())
    n_merged = int((merged["n_reference_clusters"] > 1).sum())
    assert metric(at, f"{TWO[0]} clusters split in {TWO[1]}") == f"{n_split:,}"
    assert metric(at, f"{TWO[1]} clusters merging several {TWO[0]} clusters") == f"{n_merged:,}"
    assert len(at.get("plotly_chart")) == 2  # size distribution and agreement heat map
    mentions = datasets.load_patentsview_mentions()
    names = mentions["name_first"] + " " + mentions["name_last"]
    summary = summary_table({v: predictions[v] for v in TWO}, names=names)
    shown = at.dataframe[0].value
    assert list(shown.columns) == TWO
    for v in TWO:
        np.testing.assert_allclose(shown[v].astype(float), summary.loc[v].astype(float))
    # The agreement heat map holds the library's pairwise F1 of the two versions.
    z = json.loads(at.get("plotly_chart")[1].proto.spec)["data"][0]["z"]
    if isinstance(z, dict):  # plotly's binary array encoding
        shape = [int(n) for n in str(z.get("shape", "2, 2")).split(",")]
        z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(shape)
    f1 = quiet(evaluate, new, old, metrics=["pairwise_f1"], on_missing="restrict").iloc[0, 0]
    np.testing.assert_allclose(np.asarray(z, dtype=float), [[1.0, f1], [f1, 1.0]])
    # Drill down: the records of the chosen split cluster, with both versions' cluster ids.
    chosen = at.selectbox(key="cmp_drill").value
    detail = at.dataframe[-1].value
    assert set(detail.index) == set(old.index[old == chosen])
    assert detail[f"cluster in {TWO[1]}"].nunique() > 1


# -- pair labelling ------------------------------------------------------------------------


@pytest.mark.slow
def test_pair_labels_are_logged_and_estimated(project):
    at = open_page("pairs")
    for button in ("pairs_match", "pairs_non-match", "pairs_non-match", "pairs_unsure"):
        at.button(key=button).click().run()
        assert not at.exception
    logs = list((project / "pairs").glob("*.jsonl"))
    assert len(logs) == 1
    events = [json.loads(line) for line in logs[0].read_text().splitlines()[1:]]
    assert [e["answer"] for e in events] == ["match", "non-match", "non-match", "unsure"]
    session = at.session_state["pair_sessions"][str(logs[0])]
    shown = at.dataframe[-1].value
    expected = session.estimate().to_frame().set_index("metric")
    pd.testing.assert_frame_equal(shown, expected, check_names=False)
    assert [m.label for m in at.metric] == list(expected.index)
    # the live stopping signal: each interval's width after the answers so far
    assert any("interval widths after 3 labels" in c.value for c in at.caption)
    assert not at.success
    # A reopened session (e.g. after a restart) replays the same labels.
    with LabellingSession(session.pool, logs[0]) as reopened:
        assert reopened.n_labels == session.n_labels == 3


@pytest.mark.slow
def test_pair_page_says_when_the_target_width_is_reached(project):
    at = open_page("pairs")
    at.number_input(key="pairs_target_width").set_value(1.0).run()
    at.button(key="pairs_match").click().run()
    assert not at.success  # one label: no estimate yet
    for _ in range(3):
        at.button(key="pairs_non-match").click().run()
    session = next(iter(at.session_state["pair_sessions"].values()))
    widths = session.widths(1.0)
    if widths.reached:
        assert at.success and "Target width reached" in at.success[0].value
    else:  # an estimate not reliable yet holds the signal back, and says which
        assert any("not reached" in c.value for c in at.caption)
    at.number_input(key="pairs_target_width").set_value(0.01).run()
    assert not at.success and any("target width 0.01 not reached" in c.value for c in at.caption)


@pytest.mark.slow
def test_pair_labelling_with_ais_shows_the_pr_curve(project):
    at = open_page("pairs")
    at.selectbox(key="pairs_method").set_value("ais").run()
    for _ in range(4):
        at.button(key="pairs_match").click().run()
        assert not at.exception, [e.value for e in at.exception]
    session = next(s for s in at.session_state["pair_sessions"].values() if s.sampler.name == "ais")
    assert session.n_labels == 4
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    assert spec["layout"]["xaxis"]["title"]["text"] == "recall"
    assert spec["data"][0]["error_y"]["type"] == "data"


@pytest.mark.slow
def test_two_tabs_labelling_one_block_share_the_log(project):
    """Two tabs on one block share one label log: the second answer to a pair is not
    recorded, both tabs go on, and the log's steps stay consecutive."""
    tab_a, tab_b = open_page("pairs"), open_page("pairs")
    tab_a.button(key="pairs_match").click().run()
    tab_b.button(key="pairs_non-match").click().run()  # same pair, answered second
    assert not tab_a.exception and not tab_b.exception
    assert "already answered in another session" in tab_b.info[0].value
    tab_b.button(key="pairs_match").click().run()
    tab_a.button(key="pairs_non-match").click().run()
    log = next((project / "pairs").glob("*.jsonl"))
    events = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert [e["step"] for e in events] == list(range(len(events)))
    assert [e["answer"] for e in events if e["source"] != "cache"] == ["match", "match"]
    session = tab_a.session_state["pair_sessions"][str(log)]
    with LabellingSession(session.pool, log) as reopened:
        assert reopened.n_labels == 2


@pytest.mark.slow
def test_a_log_that_cannot_be_read_is_named_with_its_line_and_why(project):
    """The Pair labelling page shows which line of the label log is bad and why, instead
    of a traceback or a silent fresh start."""
    at = open_page("pairs")
    for _ in range(2):
        at.button(key="pairs_match").click().run()
    log = next((project / "pairs").glob("*.jsonl"))
    lines = log.read_text().splitlines()
    lines[2] = lines[2].replace('"label": 1', '"label": "yes"', 1)
    log.write_text("\n".join(lines) + "\n")
    fresh = open_page("pairs")
    assert fresh.error and f"{log}, line 3: label is 'yes'" in fresh.error[0].value
    assert "Could not open the label log" in fresh.error[0].value


@pytest.mark.slow
def test_a_block_without_pairs_is_a_plain_message_and_one_pair_is_labelled_to_the_end(project):
    """Through the app: a block of one record has no candidate pair (a
    plain message, no traceback); a block of two records has one pair, and once it is
    labelled the page says every pair is labelled."""
    from er_evaluation import datasets

    mentions = datasets.load_patentsview_mentions()
    newest = datasets.load_patentsview_predictions([TWO[1]])[TWO[1]]
    sizes = mentions.loc[newest.index, "block"].value_counts()
    at = open_page("pairs")
    single = sizes.index[sizes == 1][0]
    at.selectbox(key="pairs_block").set_value(single).run()
    assert not at.exception
    assert at.error[0].value == (
        f"Could not build the pair pool: no candidate pair in the blocks {single!r}: a pair "
        "needs a block of at least two records"
    )
    at.selectbox(key="pairs_block").set_value(sizes.index[sizes == 2][0]).run()
    at.button(key="pairs_match").click().run()
    assert not at.exception and not at.error
    assert at.success[0].value == "Every pair the sampler can draw is labelled."


def test_the_giant_patentsview_block_is_refused_before_any_pair_is_built(project):
    """The bundled data has a block of 9,055 records (40,991,985 pairs;
    building them did not fit in 12 GB, benchmarks/README.md). The block list shows every
    block's records and pairs, marks that block too large, and choosing it shows the
    library's message instead of building the pool."""
    at = open_page("pairs")
    box = at.selectbox(key="pairs_block")
    assert "fl:se_ln:lee (9,055 records, 40,991,985 pairs) — too large to label" in box.options
    # marked exactly when over the default limit of 2,000,000 pairs
    shown = [re.fullmatch(r".* \(([\d,]+) records, ([\d,]+) pairs\)(.*)", o) for o in box.options]
    pairs = [int(m[2].replace(",", "")) for m in shown]
    assert [m[3] == " — too large to label" for m in shown] == [p > 2_000_000 for p in pairs]
    assert sum(p > 2_000_000 for p in pairs) >= 2 and min(pairs) == 0
    before = set(at.session_state["pair_sessions"])
    box.set_value("fl:se_ln:lee").run()
    assert not at.exception
    assert at.error[0].value.startswith(
        "Cannot label this block: block 'fl:se_ln:lee' (9,055 records, 40,991,985 pairs) is "
        "too large for in-memory pair labelling: the limit is 2,000,000 candidate pairs"
    )
    assert not at.button  # no pair to answer
    assert set(at.session_state["pair_sessions"]) == before  # no session, no log for it
    assert not any("se_ln_lee" in p.name for p in (project / "pairs").glob("*"))


@pytest.mark.slow
def test_a_giant_block_split_by_a_field_labels_one_sub_block(project):
    """What the refusal suggests, on the page: split 'fl:se_ln:lee' by first name (861
    sub-blocks of at most 675 records); the chosen sub-block's pool holds exactly the
    block's pairs agreeing on the lower-cased first name, and its answers are logged. A
    sub-block still over the limit (city 'seoul', 2,596 records) is refused the same way."""
    at = open_page("pairs")
    at.selectbox(key="pairs_block").set_value("fl:se_ln:lee").run()
    at.selectbox(key="pairs_split").set_value("city").run()
    at.selectbox(key="pairs_sub_block").set_value("fl:se_ln:lee / seoul").run()
    assert not at.exception
    assert at.error[0].value.startswith(
        "Cannot label this sub-block: block 'fl:se_ln:lee / seoul' (2,596 records, 3,368,310 "
        "pairs) is too large"
    )
    at.selectbox(key="pairs_split").set_value("name_first").run()
    sub = at.selectbox(key="pairs_sub_block")
    assert len(sub.options) == 861 and not any("too large" in o for o in sub.options)
    sub.set_value("fl:se_ln:lee / seungmin").run()
    assert not at.exception and not at.error
    assert "this is its sub-block of records that also share the same name_first" in (
        at.warning[0].value
    )
    at.button(key="pairs_match").click().run()
    log = project / "pairs" / "2022-06-30__fl_se_ln_lee _ seungmin by name_first__oasis.jsonl"
    session = at.session_state["pair_sessions"][str(log)]
    assert session.n_labels == 1
    mentions = datasets.load_patentsview_mentions()
    newest = datasets.load_patentsview_predictions([TWO[1]])[TWO[1]]
    inside = mentions.loc[newest.index]
    first = inside["name_first"].astype("string").str.strip().str.lower()
    chosen = inside.index[((inside["block"] == "fl:se_ln:lee") & (first == "seungmin")).to_numpy()]
    assert session.pool.n_pairs == len(chosen) * (len(chosen) - 1) // 2 == 675 * 674 // 2
    assert set(session.pool.pairs["id_left"]) | set(session.pool.pairs["id_right"]) == set(chosen)


def test_records_without_a_block_key_are_counted_not_dropped_silently(project, tmp_path):
    project.mkdir(parents=True)
    records = pd.DataFrame(
        {"rid": ["a", "b", "c", "d"], "name": ["x y", "x", "y", "z"], "block": [1, 1, None, 1]}
    )
    records.to_csv(tmp_path / "records.csv", index=False)
    pd.DataFrame({"rid": records["rid"], "v1": [0, 0, 1, 2]}).to_csv(
        tmp_path / "pred.csv", index=False
    )
    write_files_project(
        project,
        tmp_path / "records.csv",
        tmp_path / "pred.csv",
        fields=["name"],
        version_cols=["v1"],
        block_col="block",
    )
    at = open_page("pairs")
    assert at.selectbox(key="pairs_block").options == ["1.0 (3 records, 3 pairs)"]
    assert "1 records of version v1 have no 'block' value and are in no block." in [
        c.value for c in at.caption
    ]
    assert "3 candidate pairs in the block" in " ".join(c.value for c in at.caption)


@pytest.mark.slow
def test_project_page_one_file_per_version_by_upload(project, tmp_path):
    paths = write_own_files(tmp_path / "inputs")
    at = open_page("project")
    at.radio(key="source").set_value("My own files").run()
    at.file_uploader(key="records_upload").upload(
        "records.csv", paths["records"].read_bytes(), "text/csv"
    ).run()
    at.selectbox(key="records_id_col").set_value("rid").run()
    at.radio(key="pred_layout").set_value("long").run()
    wide = pd.read_csv(paths["wide"])
    files = []
    for version in ("v1", "v2"):
        long = wide[["rid", version]].dropna().rename(columns={version: "cluster"})
        files.append((f"{version}.csv", long.to_csv(index=False).encode(), "text/csv"))
    at.file_uploader(key="pred_files_upload").set_value(files).run()
    for box in at.selectbox:
        if box.key.startswith("pred_id_"):
            box.set_value("rid")
        elif box.key.startswith("pred_c_"):
            box.set_value("cluster")
    at.run()
    at.button(key="save_project").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [s.value for s in at.success] == ["Project saved."]
    config = json.loads((project / "project.json").read_text())
    assert [f["version"] for f in config["predictions"]["files"]] == ["v1", "v2"]
    # Uploads are kept inside the project folder, so the project reopens without them.
    assert all(Path(f["path"]).parent == project / "inputs" for f in config["predictions"]["files"])
    assert Path(config["records"]["path"]) == project / "inputs" / "records.csv"
    versions = at.dataframe[-1].value
    assert list(versions["version"]) == ["v1", "v2"] and list(versions["records"]) == [5, 4]


@pytest.mark.slow
def test_project_folder_chosen_in_the_ui(project, tmp_path):
    other = tmp_path / "elsewhere"
    at = open_page("project")
    at.text_input(key="project_folder").set_value(str(other)).run()
    assert not other.exists()  # asked first, nothing created yet
    assert any(str(other) in i.value and "Create a project there?" in i.value for i in at.info)
    at.button(key="create_folder").click().run()
    assert not at.exception
    assert other.is_dir()
    assert at.query_params["project"] == str(other)
    assert at.session_state["project_dir_chosen"] == str(other)
    assert str(other) in at.sidebar.caption[0].value
    at.switch_page("views/sample.py").run()
    at.number_input(key="sample_size").set_value(5)
    at.button(key="draw_sample").click().run()
    assert len(pd.read_parquet(other / "queue.parquet")) == 5
    assert json.loads((other / "project.json").read_text())["sample"]["size"] == 5


@pytest.mark.slow
def test_project_folder_resolved_and_refused_in_sentences(project, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile.txt").write_text("x")
    at = open_page("project")
    at.text_input(key="project_folder").set_value("sub/../afile.txt").run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"{tmp_path / 'afile.txt'} is a file, not a folder: choose a folder for the project"
    ]
    at.text_input(key="project_folder").set_value("new/../proj").run()
    assert any(str(tmp_path / "proj") in c.value for c in at.caption)  # shown resolved
    assert not (tmp_path / "proj").exists()


@pytest.mark.slow
def test_a_bad_upload_leaves_the_saved_project_as_it_was(project, tmp_path):
    at = open_page("project")
    paths = write_own_files(tmp_path / "inputs")
    at = fill_own_files(at, paths)
    assert [s.value for s in at.success] == ["Project saved."]
    saved = (project / "project.json").read_text()
    # A replacement records file with a duplicated id: uploaded, not saved yet...
    bad = pd.read_csv(paths["records"])
    bad = pd.concat([bad, bad.iloc[:1]]).to_csv(index=False).encode()
    at.file_uploader(key="records_upload").upload("records.csv", bad, "text/csv").run()
    assert not at.exception
    assert (project / "project.json").read_text() == saved
    assert not (project / "inputs").exists()  # kept in the session until saved
    # ...and refused on save, in a sentence, with nothing changed.
    at.button(key="save_project").click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "Not saved; the project is unchanged" in errors[0]
    assert "appear more than once" in errors[0]
    assert (project / "project.json").read_text() == saved
    from er_evaluation.review import Project

    assert len(Project.open(project).data.records) == 5  # still loads


@pytest.mark.slow
@pytest.mark.parametrize(
    "content, problem",
    [
        (b'rid,name\nr1,"never closed\nr2,b\n', "malformed CSV"),
        (b"\x1f\x8b\x08 not a table", "not utf-8 text"),
        (b"", "the file is empty"),
    ],
    ids=["open-quote", "binary", "empty"],
)
def test_a_malformed_upload_is_named_without_server_paths(
    project, tmp_path, monkeypatch, content, problem
):
    """The message names the uploaded file and what is wrong with it, never where the
    server staged its copy, and the staging folder is gone afterwards."""
    staging = tmp_path / "server-tmp"
    staging.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(staging))  # the app runs in this process
    at = open_page("project")
    at.radio(key="source").set_value("My own files").run()
    at.file_uploader(key="records_upload").upload("records.csv", content, "text/csv").run()
    assert not at.exception, [e.value for e in at.exception]
    (error,) = [e.value for e in at.error]
    assert error.startswith("Could not read records.csv") and problem in error, error
    for hidden in (str(staging), "er-eval-upload", "/tmp/", str(project)):
        assert hidden not in error, error
    assert list(staging.iterdir()) == []  # the staged copy is removed at once
    assert not (project / "inputs").exists()


@pytest.mark.slow
def test_version_names_stay_with_their_files(project, tmp_path):
    paths = write_own_files(tmp_path / "inputs")
    wide = pd.read_csv(paths["wide"])
    for version in ("v1", "v2"):
        wide[["rid", version]].dropna().to_csv(tmp_path / f"p_{version}.csv", index=False)
    at = open_page("project")
    at.radio(key="source").set_value("My own files").run()
    at.text_input(key="records_path").set_value(str(paths["records"])).run()
    at.selectbox(key="records_id_col").set_value("rid").run()
    at.radio(key="pred_layout").set_value("long").run()
    at.text_area(key="pred_files_paths").set_value(
        f"{tmp_path / 'p_v1.csv'}\n{tmp_path / 'p_v2.csv'}"
    ).run()
    boxes = [t for t in at.text_input if t.key.startswith("pred_v_")]
    boxes[0].set_value("first")
    boxes[1].set_value("second")
    at.run()
    # A file added before the others: each name stays with its file, not its row.
    unknown = pd.DataFrame({"rid": ["zz"], "cluster": ["c"]}).to_csv(index=False).encode()
    at.file_uploader(key="pred_files_upload").set_value(
        [("v_unknown.csv", unknown, "text/csv")]
    ).run()
    names = {t.label: t.value for t in at.text_input if t.key.startswith("pred_v_")}
    assert names == {
        "Version name of v_unknown.csv": "v_unknown",
        "Version name of p_v1.csv": "first",
        "Version name of p_v2.csv": "second",
    }
    for box in at.selectbox:
        if box.key.startswith("pred_id_"):
            box.set_value("rid")
    at.run()
    at.button(key="save_project").click().run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "'zz'" in errors[0] and "v_unknown" in errors[0]
