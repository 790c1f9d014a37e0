"""The review store refuses what would spoil a benchmark later, when it is given: a
reviewer name nobody reviewed under (a typo would export everyone's decisions), record
ids mixing text and numbers (1 and '1' are two records; the benchmark could not be
exported); and a project folder that cannot be written is still read."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from er_evaluation.review import ReviewError, ReviewStore
from er_evaluation.review.project import STORE_NAME


def _one_review(store: ReviewStore, record=1, shown=(1, 2), reviewer="ann"):
    return store.record_review(
        reviewer=reviewer, sampled_record=record, predicted_cluster="c", shown_records=shown
    )


# -- reviewer names ----------------------------------------------------------------------


def test_an_unknown_reviewer_is_refused_with_the_names_there_are(store, tmp_path):
    _one_review(store)
    _one_review(store, record=2, reviewer="bob")
    with pytest.raises(ReviewError, match=r"no decision by reviewer 'an' \(did you mean 'ann'"):
        store.export(tmp_path / "b.csv", reviewer="an")
    with pytest.raises(
        ReviewError, match=r"no decision by reviewer 'nobody'; the reviewers are 'ann', 'bob'"
    ):
        store.true_clusters(reviewer="nobody")
    with pytest.raises(ReviewError, match="no decision by reviewer 'ann'"):
        ReviewStore(tmp_path / "empty.sqlite").decisions(reviewer="ann")
    assert not (tmp_path / "b.csv").exists()
    assert store.true_clusters(reviewer="bob").index.tolist() == [1, 2]


@pytest.mark.slow
def test_the_command_line_refuses_an_unknown_reviewer(cli, review_project, tmp_path):
    out = tmp_path / "benchmark.csv"
    code, _, err = cli(["review", "export", review_project, "-o", out, "--reviewer", "nobody"])
    assert code == 1 and "unknown reviewer 'nobody'" in err and "'ann', 'bob'" in err
    assert not out.exists()
    code, _, err = cli(["review", "estimate", review_project, "--reviewer", "bobb"])
    assert code == 1 and "(did you mean 'bob'?)" in err


# -- mixed-type ids ----------------------------------------------------------------------


def test_a_review_mixing_text_and_number_ids_is_refused_at_save(store):
    with pytest.raises(ReviewError, match=r"record ids mix text \('1'\) and numbers \(1, 2\)"):
        _one_review(store, shown=(1, "1", 2))
    with pytest.raises(ReviewError, match="mix text"):
        store.record_review(
            reviewer="ann",
            sampled_record=1,
            predicted_cluster="c",
            shown_records=[1, 2],
            added=["9"],
        )
    assert store.events().empty


def test_a_review_whose_ids_differ_in_type_from_the_store_is_refused(store, tmp_path):
    _one_review(store)
    with pytest.raises(ReviewError, match=r"the store's records are numbers, e.g. 1"):
        _one_review(store, record="3", shown=("3", "4"))
    sheet = pd.DataFrame(
        {"sampled_record": ["5"], "predicted_cluster": ["c"], "removed": [""], "add": [""]}
    )
    with pytest.raises(ReviewError, match="mix text"):
        store.import_sheet(
            sheet,
            prediction=pd.Series(["c", "c"], index=["5", "6"]),
            reviewer="ann",
            remove_col="removed",
        )
    assert len(store.events()) == 1
    store.export(tmp_path / "b.csv")  # the store stays exportable


# -- read-only projects ------------------------------------------------------------------


def _freeze(folder: Path) -> None:
    """Make ``folder`` and its files unwritable, also for root (which ignores modes)."""
    for path in [*folder.iterdir(), folder]:
        path.chmod(path.stat().st_mode & ~0o222)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", *folder.iterdir(), folder], check=True)


def _thaw(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", folder, *folder.iterdir()], check=True)
    for path in [folder, *folder.iterdir()]:
        path.chmod(path.stat().st_mode | 0o200)


@pytest.fixture
def frozen_project(review_project, tmp_path):
    folder = tmp_path / "frozen"
    shutil.copytree(review_project, folder)
    for extra in ("-wal", "-shm"):
        (folder / f"{STORE_NAME}{extra}").unlink(missing_ok=True)
    _freeze(folder)
    yield folder
    _thaw(folder)


@pytest.mark.slow
def test_a_read_only_project_can_be_read(cli, frozen_project, tmp_path):
    with pytest.raises(OSError):
        (frozen_project / "probe").touch()
    code, out, err = cli(["review", "status", frozen_project])
    assert code == 0, err
    assert "decisions" in out
    code, _, err = cli(["review", "export", frozen_project, "-o", tmp_path / "b.csv"])
    assert code == 0, err
    assert len(pd.read_csv(tmp_path / "b.csv")) > 0
    assert sorted(p.name for p in frozen_project.iterdir()) == sorted(
        ["project.json", "queue.parquet", STORE_NAME]
    )


def test_a_read_only_store_refuses_a_save_with_a_review_error(frozen_project):
    store = ReviewStore(frozen_project / STORE_NAME)
    assert len(store.events()) > 0
    with pytest.raises(ReviewError, match="read-only here .* nothing was saved"):
        _one_review(store, record="x", shown=("x",))


# -- review sheets -----------------------------------------------------------------------


def test_a_sheet_against_a_prediction_with_duplicated_ids_names_them(store):
    sheet = pd.DataFrame(
        {"sampled_record": ["1"], "predicted_cluster": ["c"], "remove": [""], "add": [""]}
    )
    prediction = pd.Series(["c", "c", "d"], index=["1", "1", "2"])
    with pytest.raises(ReviewError, match=r"gives 1 record id\(s\) more than once: '1'"):
        store.import_sheet(sheet, prediction=prediction, reviewer="ann")
    assert store.events().empty


def test_a_message_of_several_rows_keeps_them_apart_on_one_line():
    from er_evaluation.cli import error_line

    error = ReviewError(
        "review sheet: 2 invalid row(s), nothing imported:\n  row 0 ('1'): a\n  row 1 ('2'): b"
    )
    assert error_line(error) == (
        "review sheet: 2 invalid row(s), nothing imported: row 0 ('1'): a; row 1 ('2'): b"
    )


def test_the_app_lists_the_rows_of_a_several_line_error():
    from er_evaluation.app.app_common import error_markdown

    text = error_markdown(
        "Import failed",
        "review sheet: 2 invalid row(s), nothing imported:\n  row 0 ('1'): a\n  row 1 ('2'): b",
    )
    assert text == (
        "Import failed: review sheet: 2 invalid row(s), nothing imported:\n"
        "- row 0 ('1'): a\n- row 1 ('2'): b"
    )
    assert error_markdown("Failed", "one line") == "Failed: one line"
