"""``er-eval review`` as a team scripting its review: init, draw, a review sheet per
reviewer, import, agreement, adjudication, export, and ``er-eval estimate`` on the export
giving exactly ``er-eval review estimate``'s numbers; with the app's checks on the way."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from _helpers import export_and_estimate

from er_evaluation.estimators.results import SHOWN_COLUMNS, unreliable_notes
from er_evaluation.review import Project

TRUTH = pd.Series(
    ["a", "a", "a", "b", "b", "c", "d", "d", "d", "e", "e", "f"],
    index=[f"r{i:02d}" for i in range(1, 13)],
)
V1 = pd.Series(["p", "p", "q", "q", "q", "s", "t", "t", "t", "t", "u", "w"], index=TRUTH.index)


@pytest.fixture
def inputs(tmp_path):
    pd.DataFrame({"rid": TRUTH.index, "name": [f"name {c}" for c in TRUTH]}).to_csv(
        tmp_path / "records.csv", index=False
    )
    pd.DataFrame({"rid": V1.index, "cluster": V1.to_numpy()}).to_csv(
        tmp_path / "v1.csv", index=False
    )
    return tmp_path


def fill(sheet: pd.DataFrame, *, wrong: str | None = None) -> pd.DataFrame:
    """The sheet filled in with the truth (and, on record ``wrong``, forgetting to add the
    missing records: a reviewer's slip)."""
    sheet = sheet.copy()
    for i, row in sheet.iterrows():
        shown = str(row["cluster_records"]).split()
        true = TRUTH.index[TRUTH == TRUTH[row["sampled_record"]]]
        sheet.loc[i, "remove"] = " ".join(m for m in shown if m not in set(true))
        missing = [r for r in true if r not in set(shown)]
        sheet.loc[i, "add"] = "" if row["sampled_record"] == wrong else " ".join(missing)
        if not sheet.loc[i, "remove"] and not sheet.loc[i, "add"]:
            sheet.loc[i, "status"] = "correct"
    return sheet


def init(cli, inputs, reviewers: str = "ann"):
    """``er-eval review init`` of the project ``inputs/P`` (the records, version v1); its
    folder."""
    folder = inputs / "P"
    code, _, err = cli(
        ["review", "init", folder, "--records", inputs / "records.csv", "--prediction",
         inputs / "v1.csv", "--reviewers", reviewers]
    )  # fmt: skip
    assert code == 0, err
    return folder


def read_csv(text: str, **kw) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text), **kw)


def test_the_scripted_review_gives_the_estimates_of_its_export(cli, inputs):
    folder = init(cli, inputs, "ann,bob")
    code, out, err = cli(
        ["review", "draw", folder, "--size", 6, "--reviewers", "ann,bob", "--double", 1]
    )
    assert code == 0, err
    assert "ann: 6 units" in out and "bob: 6 units" in out

    # each reviewer fills in a sheet of their items; one record is decided differently
    sheets = {}
    for name in ("ann", "bob"):
        code, _, err = cli(
            ["review", "sheet", folder, "-o", inputs / f"{name}.csv", "--reviewer", name]
        )
        assert code == 0, err
        sheets[name] = pd.read_csv(inputs / f"{name}.csv", dtype=str, keep_default_na=False)
    split = next(r for r in sheets["bob"]["sampled_record"] if TRUTH[r] in ("a", "d", "e"))
    fill(sheets["ann"]).to_csv(inputs / "ann_done.csv", index=False)
    fill(sheets["bob"], wrong=split).to_csv(inputs / "bob_done.csv", index=False)
    for name in ("ann", "bob"):
        code, _, err = cli(["review", "import", folder, inputs / f"{name}_done.csv"])
        assert code == 0, err
    assert "1 record(s) decided differently wait for adjudication" in err

    code, out, err = cli(["review", "agreement", folder, "--format", "json"])
    assert code == 0, err
    agreement = {k: v["value"] for k, v in json.loads(out).items()}
    assert agreement["double_reviewed"] == 6 and type(agreement["link_decisions"]) is int
    assert agreement["identical_share"] == pytest.approx(5 / 6)

    code, out, err = cli(["review", "adjudicate", folder, "--format", "csv"])
    assert code == 0, err
    assert list(read_csv(out)["sampled_record"]) == [split]
    code, _, err = cli(["review", "adjudicate", folder, split, "--by", "ann", "--keep", "ann"])
    assert code == 0, err
    code, out, _ = cli(["review", "adjudicate", folder])
    assert code == 0 and out == "no disagreement waits for adjudication\n"

    bench = inputs / "benchmark.csv"
    review_out, _, estimate_out, err = export_and_estimate(cli, folder, inputs / "v1.csv", bench)
    assert (inputs / "benchmark.sample.json").exists()
    assert "design 'records' from benchmark.sample.json" in err
    reviewed = read_csv(review_out).set_index(["prediction", "metric"])
    estimated = read_csv(estimate_out).set_index(["prediction", "metric"])
    columns = ["value", "std_error", "ci_low", "ci_high", "estimator", "n_units", "n_records"]
    pd.testing.assert_frame_equal(reviewed[columns], estimated[columns])
    # as text, the same table (the notes of unreliable estimates: the test below)
    review_text, review_err, estimate_text, _ = export_and_estimate(
        cli, folder, inputs / "v1.csv", bench, fmt="table"
    )
    assert review_text == estimate_text
    assert review_text.split("\n", 1)[0].split() == list(SHOWN_COLUMNS)
    assert "n_effective: the number of equally weighted" in review_err
    # the adjudicated (true) decision is the one estimated: every cluster reviewed right
    truth_sample = Project.open(folder).sample()[0]
    assert truth_sample.reference.groupby(truth_sample.reference).size().sum() == 12


def test_review_estimate_and_estimate_of_the_export_say_the_same_unreliable_notes(cli, inputs):
    """One reviewed record gives no standard error: every estimate is flagged not reliable,
    once, in the same words by ``review estimate`` and ``er-eval estimate`` on the export."""
    folder = init(cli, inputs)
    assert cli(["review", "draw", folder, "--size", 1, "--reviewers", "ann"])[0] == 0
    code, _, err = cli(["review", "sheet", folder, "-o", inputs / "ann.csv", "--reviewer", "ann"])
    assert code == 0, err
    sheet = pd.read_csv(inputs / "ann.csv", dtype=str, keep_default_na=False)
    fill(sheet).to_csv(inputs / "ann_done.csv", index=False)
    assert cli(["review", "import", folder, inputs / "ann_done.csv"])[0] == 0
    bench = inputs / "benchmark.csv"
    review_out, *_ = export_and_estimate(cli, folder, inputs / "v1.csv", bench)
    review_text, review_err, estimate_text, estimate_err = export_and_estimate(
        cli, folder, inputs / "v1.csv", bench, fmt="table"
    )
    assert review_text == estimate_text
    notes = [line for line in review_err.splitlines() if "not reliable" in line]
    assert len(notes) == 3 and all("no standard error" in note for note in notes)
    assert notes == unreliable_notes(read_csv(review_out))
    assert notes == [line for line in estimate_err.splitlines() if "not reliable" in line]


def test_unknown_reviewers_are_refused_everywhere(cli, inputs):
    folder = init(cli, inputs)
    cli(["review", "draw", folder, "--size", 4])
    code, _, err = cli(["review", "export", folder, "-o", inputs / "b.csv", "--reviewer", "nobody"])
    assert code == 1
    assert err == (
        "er-eval review: error: unknown reviewer 'nobody': the project's reviewers are 'ann'\n"
    )
    assert not (inputs / "b.csv").exists()
    code, _, err = cli(["review", "estimate", folder, "--reviewer", "Nobody"])
    assert code == 1 and "unknown reviewer 'Nobody'" in err
    code, _, err = cli(["review", "sheet", folder, "-o", inputs / "s.csv", "--reviewer", "zed"])
    assert code == 1 and "unknown reviewer 'zed'" in err
    code, out, _ = cli(["review", "reviewers", folder, "--add", "Zed", "ANN"])
    assert code == 0 and out.split() == ["ann", "Zed"]


def test_sheet_errors_are_one_per_line(cli, inputs):
    folder = init(cli, inputs)
    cli(["review", "draw", folder, "--size", 4])
    queue = Project.open(folder).queue["record_id"]
    outside = next(r for r in TRUTH.index if r not in set(queue))
    pd.DataFrame(
        {
            "sampled_record": [queue.iloc[0], queue.iloc[1], outside],
            "remove": ["zz9", "", ""],
            "add": ["", "", ""],
            "reviewer": ["ann", "mallory", "ann"],
        }
    ).to_csv(inputs / "bad.csv", index=False)
    code, out, err = cli(["review", "import", folder, inputs / "bad.csv"])
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == (
        f"er-eval review import: error: {inputs / 'bad.csv'}: review sheet: 3 invalid row(s), "
        "nothing imported:"
    )
    assert len(lines) == 4
    assert "'zz9'" in lines[1] and "unknown reviewer 'mallory'" in lines[2]
    assert "not an item of the review queue" in lines[3]
    assert Project.open(folder).store.events().empty


def test_flags_given_without_a_name_or_out_of_range_are_named(cli, inputs):
    folder = inputs / "P"
    init = ["review", "init", folder, "--records", inputs / "records.csv", "--prediction",
            inputs / "v1.csv"]  # fmt: skip
    code, _, err = cli([*init, "--reviewers", ""])
    assert code == 1 and "--reviewers '' names no one" in err and not folder.exists()
    assert cli([*init, "--reviewers", "ann,bob"])[0] == 0
    for argv, message in (
        (["--size", 0], "--size must be a whole number >= 1, got 0"),
        (["--size", 4, "--double", 1.5], "--double must be in [0, 1], got 1.5"),
        (["--size", 4, "--reviewers", " , "], "--reviewers ' , ' names no one"),
        (["--design", "recommended", "--records", -2], "--records must be a whole number"),
    ):
        code, _, err = cli(["review", "draw", folder, *argv])
        assert code == 1 and message in err, err
    assert Project.open(folder).queue is None


def test_a_sheet_is_checked_row_by_row_as_the_reviewer_numbers_its_rows(cli, inputs):
    folder = init(cli, inputs, "ann,bob")
    cli(["review", "draw", folder, "--size", 6, "--reviewers", "ann,bob", "--double", 1])
    cli(["review", "sheet", folder, "-o", inputs / "ann.csv", "--reviewer", "ann"])
    sheet = fill(pd.read_csv(inputs / "ann.csv", dtype=str, keep_default_na=False))
    # a row is named as a spreadsheet numbers it (header row 1, first data row 2)
    slip = sheet.copy()
    slip.loc[1, "remove"] = slip.loc[1, "sampled_record"]
    slip.to_csv(inputs / "slip.csv", index=False)
    code, _, err = cli(["review", "import", folder, inputs / "slip.csv"])
    assert code == 1
    assert f"row 3 (sampled_record {sheet.loc[1, 'sampled_record']!r}): the sampled record" in err
    # the sheet's own column names, mapped by flags that the error names
    renamed = sheet.rename(columns={"sampled_record": "record", "remove": "out"})
    renamed.to_csv(inputs / "renamed.csv", index=False)
    code, _, err = cli(["review", "import", folder, inputs / "renamed.csv"])
    assert code == 1 and "(set --sampled-col, --remove-col, --add-col to map yours)" in err
    code, out, err = cli(
        ["review", "import", folder, inputs / "renamed.csv", "--sampled-col", "record",
         "--remove-col", "out"]
    )  # fmt: skip
    assert code == 0 and out == f"imported 6 decisions from {inputs / 'renamed.csv'}\n", err
    # the same sheet again saves nothing twice, and says so
    events = len(Project.open(folder).store.events())
    sheet.to_csv(inputs / "again.csv", index=False)
    code, out, err = cli(["review", "import", folder, inputs / "again.csv"])
    assert code == 0, err
    assert "imported 0 decisions" in out and "6 row(s) repeat their reviewer's decision" in out
    assert len(Project.open(folder).store.events()) == events


def test_the_disagreement_note_says_whose_decisions_the_figures_use(cli, inputs):
    folder = init(cli, inputs, "ann,bob")
    cli(["review", "draw", folder, "--size", 6, "--reviewers", "ann,bob", "--double", 1])
    for name in ("ann", "bob"):
        cli(["review", "sheet", folder, "-o", inputs / f"{name}.csv", "--reviewer", name])
    ann = pd.read_csv(inputs / "ann.csv", dtype=str, keep_default_na=False)
    split = next(r for r in ann["sampled_record"] if TRUTH[r] in ("a", "d", "e"))
    fill(ann).to_csv(inputs / "ann.csv", index=False)
    bob = pd.read_csv(inputs / "bob.csv", dtype=str, keep_default_na=False)
    fill(bob, wrong=split).to_csv(inputs / "bob.csv", index=False)
    for name in ("ann", "bob"):
        assert cli(["review", "import", folder, inputs / f"{name}.csv"])[0] == 0
    _, _, err = cli(["review", "estimate", folder])
    assert "these figures use the later decision on each (bob's on 1)" in err
    _, _, err = cli(["review", "estimate", folder, "--reviewer", "ANN"])
    assert "use ann's own decision where ann made one, else the later one (ann's on 1)" in err
    assert "the later decision on each" not in err


def _sheet_case(sheet: pd.DataFrame, case: str) -> tuple[pd.DataFrame, str]:
    """A filled-in sheet with one slip a spreadsheet invites, and the words that must name
    it: the row as the spreadsheet numbers it (data row i is row i + 2), the column, the
    ids."""
    i = next(k for k, r in sheet.iterrows() if len(r["cluster_records"].split()) > 1)
    row, sampled = i + 2, sheet.loc[i, "sampled_record"]
    shown = sheet.loc[i, "cluster_records"].split()
    mate = shown[1]
    outside = next(r for r in TRUTH.index if r not in set(shown))
    bad = sheet.copy()
    at = f"row {row} (sampled_record {sampled!r}): "
    if case == "add a shown record":
        bad.loc[i, "add"] = mate
        return bad, f"{at}added id(s) in column 'add' already in the predicted cluster"
    if case == "add the sampled record":
        bad.loc[i, "add"] = sampled
        return bad, f"{at}added id(s) in column 'add' already in the predicted cluster"
    if case == "remove a record not shown":
        bad.loc[i, "remove"] = outside
        return bad, f"{at}removed id(s) in column 'remove' not in the predicted cluster"
    if case == "add an unknown id":
        bad.loc[i, "add"] = "r99"
        return bad, f"{at}added id(s) in column 'add' not in the population: 'r99'"
    if case == "remove an unknown id":
        bad.loc[i, "remove"] = "r99"
        return bad, f"{at}removed id(s) in column 'remove' not in the predicted cluster"
    if case == "an id twice in a cell":
        bad.loc[i, ["remove", "status"]] = [f"{mate}, {mate}", ""]
        return bad, f"{at}column 'remove' gives {mate!r} more than once"
    if case == "a repeated row":
        bad = pd.concat([bad, bad.loc[[i]]], ignore_index=True)
        return bad, (
            f"row {len(bad) + 1} (sampled_record {sampled!r}): column 'sampled_record': the "
            f"record has a row already (row {row})"
        )
    if case == "an edited cluster_records":
        bad.loc[i, "cluster_records"] = " ".join(r for r in shown if r != mate)
        return bad, f"{at}column 'cluster_records' was edited (missing {mate!r})"
    if case == "a row left blank":
        bad.loc[i, ["remove", "add", "status"]] = ""
        return bad, f"{at}no decision: column 'status' is empty and so are 'remove' and 'add'"
    if case == "an unknown status":
        bad.loc[i, ["remove", "add", "status"]] = ["", "", "ok"]
        return bad, f"{at}column 'status': 'ok' is not one of correct, reviewed, skipped"
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case",
    [
        "add a shown record",
        "add the sampled record",
        "remove a record not shown",
        "add an unknown id",
        "remove an unknown id",
        "an id twice in a cell",
        "a repeated row",
        "an edited cluster_records",
        "a row left blank",
        "an unknown status",
    ],
)
def test_every_bad_sheet_row_is_refused_naming_row_column_and_id(cli, inputs, case):
    folder = inputs / "P"
    cli(["review", "init", folder, "--records", inputs / "records.csv", "--prediction",
         inputs / "v1.csv", "--reviewers", "ann"])  # fmt: skip
    cli(["review", "draw", folder, "--size", 6])
    cli(["review", "sheet", folder, "-o", inputs / "ann.csv", "--reviewer", "ann"])
    sheet = fill(pd.read_csv(inputs / "ann.csv", dtype=str, keep_default_na=False))
    bad, expected = _sheet_case(sheet, case)
    bad.to_csv(inputs / "bad.csv", index=False)
    code, out, err = cli(["review", "import", folder, inputs / "bad.csv"])
    assert code == 1 and out == ""
    assert "review sheet: 1 invalid row(s), nothing imported:" in err
    assert expected in err, err
    assert Project.open(folder).store.events().empty
    # the sheet as filled in imports whole
    sheet.to_csv(inputs / "good.csv", index=False)
    code, out, err = cli(["review", "import", folder, inputs / "good.csv"])
    assert code == 0 and out.startswith(f"imported {len(sheet)} decisions"), err


def test_a_sheet_of_a_shared_queue_holds_every_item(cli, inputs):
    folder = inputs / "P"
    cli(["review", "init", folder, "--records", inputs / "records.csv", "--prediction",
         inputs / "v1.csv", "--reviewers", "ann,bob"])  # fmt: skip
    cli(["review", "draw", folder, "--size", 4])
    code, out, err = cli(["review", "sheet", folder, "-o", inputs / "ann.csv", "--reviewer", "ANN"])
    assert code == 0 and out == "wrote 4 items to " + str(inputs / "ann.csv") + "\n", err
    sheet = pd.read_csv(inputs / "ann.csv", dtype=str, keep_default_na=False)
    assert set(sheet["reviewer"]) == {"ann"} and len(sheet) == 4
    assert list(sheet.columns[-4:]) == ["status", "remove", "add", "notes"]
    # a reviewer given no item of an assigned queue gets a word, not an empty file
    cli(["review", "draw", folder, "--size", 4, "--reviewers", "ann", "--earlier", "exclude"])
    code, _, err = cli(["review", "sheet", folder, "-o", inputs / "bob.csv", "--reviewer", "bob"])
    assert code == 1 and "no item of the queue is assigned to bob: no sheet written" in err
    assert not (inputs / "bob.csv").exists()


def test_an_undefined_kappa_is_explained(cli, inputs):
    folder = inputs / "P"
    cli(["review", "init", folder, "--records", inputs / "records.csv", "--prediction",
         inputs / "v1.csv", "--reviewers", "ann,bob"])  # fmt: skip
    cli(["review", "draw", folder, "--size", 3, "--reviewers", "ann,bob", "--double", 1])
    for name in ("ann", "bob"):
        cli(["review", "sheet", folder, "-o", inputs / f"{name}.csv", "--reviewer", name])
        sheet = pd.read_csv(inputs / f"{name}.csv", dtype=str, keep_default_na=False)
        sheet.assign(status="correct").to_csv(inputs / f"{name}.csv", index=False)
        assert cli(["review", "import", folder, inputs / f"{name}.csv"])[0] == 0
    code, out, err = cli(["review", "agreement", folder])
    assert code == 0 and out.split("\n")[-2].split() == ["kappa", "nan"]
    assert "kappa is undefined: the reviewers' link decisions are all one and the same" in err


def test_status_counts_a_cluster_drawn_twice_once_beside_the_finished_units(cli, inputs):
    """Two sampled records of one cluster are two finished units but one unit of the
    estimates: status printed only the finished units."""
    folder = init(cli, inputs)
    cli(["review", "draw", folder, "--size", 6, "--seed", 13])
    cli(["review", "sheet", folder, "-o", inputs / "ann.csv", "--reviewer", "ann"])
    sheet = pd.read_csv(inputs / "ann.csv", dtype=str, keep_default_na=False)
    fill(sheet).to_csv(inputs / "done.csv", index=False)
    code, _, err = cli(["review", "import", folder, inputs / "done.csv"])
    assert code == 0, err
    sample, finished = Project.open(folder).sample()
    assert finished == 6 and sample.n_units < 6  # the seed draws some cluster twice
    code, out, err = cli(["review", "status", folder, "--format", "json"])
    assert code == 0, err
    rows = {k: v["value"] for k, v in json.loads(out).items()}
    assert rows["finished_units"] == 6
    assert rows["distinct_sampled_clusters"] == sample.n_units
    assert (
        f"6 finished units ({sample.n_units} distinct sampled clusters, the estimates' "
        "n_units: a cluster drawn twice counts once)" in err
    )
    code, out, err = cli(["review", "estimate", folder, "--format", "csv"])
    assert code == 0, err
    assert set(read_csv(out)["n_units"]) == {sample.n_units}
