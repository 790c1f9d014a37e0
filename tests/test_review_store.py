"""Review store hardening and saves bound to what the reviewer saw."""

from __future__ import annotations

import os
import sqlite3
import stat

import pytest
from _helpers import in_threads, review

from er_evaluation.review import ReviewError, ReviewStore, StaleReviewError

# -- ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sampled_record": ("a", 1)}, "sampled record: .* must be str or int, got tuple"),
        ({"removed": [("a", 2)]}, "removed: .* must be str or int, got tuple"),
        ({"added": [1.5]}, "added: .* must be str or int, got float"),
        ({"added": [True]}, "added: .* must be str or int, got bool"),
        ({"added": [None]}, "added contains a missing id"),
    ],
)
def test_ids_must_be_str_or_int(store, kwargs, message):
    base = {"sampled_record": "a1", "predicted_cluster": "A", "shown_records": ["a1", "a2"]}
    with pytest.raises(ReviewError, match=message):
        store.record_review(reviewer="ann", **{**base, **kwargs})
    assert store.events().empty  # nothing written, and the store still reads


def test_undo_and_decision_check_ids_too(store):
    with pytest.raises(ReviewError, match="must be str or int, got list"):
        store.decision(["a1"])
    with pytest.raises(ReviewError, match="must be str or int, got tuple"):
        store.undo(reviewer="ann", sampled_record=("a", 1))


# -- files that are not ours ----------------------------------------------------------------


def test_foreign_sqlite_database_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "other_app.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.execute("INSERT INTO users VALUES ('x')")
    conn.commit()
    conn.close()
    with pytest.raises(ReviewError, match=r"other_app.sqlite: is an SQLite database .*\['users'\]"):
        ReviewStore(path)
    conn = sqlite3.connect(path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    conn.close()
    assert tables == ["users"]


def test_empty_sqlite_file_becomes_a_store(tmp_path):
    path = tmp_path / "empty.sqlite"
    sqlite3.connect(path).close()
    review(ReviewStore(path), "a1")
    assert len(ReviewStore(path).events()) == 1


def test_corrupt_store_gives_a_review_error_naming_the_file(tmp_path):
    path = tmp_path / "reviews.sqlite"
    store = ReviewStore(path)
    for i in range(40):
        review(store, "a1", notes="x" * 3000 + str(i))
    # Checkpoint the WAL into the main file, then overwrite pages after the header.
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(path, "r+b") as handle:
        handle.seek(4096)
        handle.write(b"\xff" * 8192)
    with pytest.raises(ReviewError, match="reviews.sqlite"):
        ReviewStore(path).events()


def test_a_folder_is_not_a_store(tmp_path):
    with pytest.raises(ReviewError, match="is a folder"):
        ReviewStore(tmp_path)


def _write_v1_store(path):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        """
        CREATE TABLE events (
            event_id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL,
            reviewer TEXT NOT NULL, status TEXT NOT NULL, sampled_record TEXT NOT NULL,
            predicted_cluster TEXT, version TEXT, shown_records TEXT NOT NULL,
            added TEXT NOT NULL, removed TEXT NOT NULL, notes TEXT NOT NULL,
            undoes INTEGER REFERENCES events (event_id));
        INSERT INTO events VALUES (1, '2026-01-01T00:00:00+00:00', 'ann', 'reviewed', '"a1"',
            '"A"', 'v', '["a1", "a2", "a3", "a4"]', '[]', '["a4"]', 'old', NULL);
        PRAGMA user_version = 1;
        """
    )
    conn.close()


def test_version_1_store_is_migrated_keeping_its_events(tmp_path):
    path = tmp_path / "v1.sqlite"
    _write_v1_store(path)
    store = ReviewStore(path)
    event = store.decision("a1")
    assert event.removed == ("a4",) and event.role == "review" and event.based_on is None
    assert review(store, "b1").event_id == 2


def test_a_store_opened_by_several_threads_at_once_is_migrated_once(tmp_path):
    path = tmp_path / "v1.sqlite"
    _write_v1_store(path)

    def open_and_write(name):
        review(ReviewStore(path), "b1", reviewer=name)

    assert in_threads(open_and_write, [f"t{k}" for k in range(6)]) == []
    assert len(ReviewStore(path).events()) == 7


# -- exports follow the umask -------------------------------------------------------------------


def test_exported_file_follows_the_umask(store, tmp_path):
    review(store, "a1")
    old = os.umask(0o022)
    try:
        path = store.export(tmp_path / "bench.csv")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


# -- saves bound to what was shown ------------------------------------------------------------


def test_a_save_based_on_a_stale_view_is_refused(store):
    # Both reviewers open a1 with no decision shown.
    alice = review(
        store, "a1", reviewer="alice", added=["c1"], notes="same employer", based_on=None
    )
    with pytest.raises(StaleReviewError, match="showed no decision, but alice saved") as caught:
        review(store, "a1", reviewer="bob", removed=["a2"], based_on=None)
    assert caught.value.current == alice and caught.value.based_on is None
    assert len(store.events()) == 1  # nothing written
    # Bob, having seen Alice's decision, keeps his own: bound to hers, so it is no conflict.
    bob = review(store, "a1", reviewer="bob", removed=["a2"], based_on=alice.event_id)
    assert bob.based_on == alice.event_id
    assert store.decision("a1") == bob
    assert store.conflicts().empty
    # Both decisions stay in the store.
    assert [e.reviewer for e in store.history("a1")] == ["alice", "bob"]


def test_a_save_after_an_undo_elsewhere_is_refused(store):
    first = review(store, "a1", based_on=None)
    store.undo(reviewer="ann", sampled_record="a1")
    with pytest.raises(StaleReviewError, match="has since been undone"):
        review(store, "a1", removed=["a2"], based_on=first.event_id)
    review(store, "a1", removed=["a2"], based_on=None)


def test_based_on_must_be_an_event_id(store):
    with pytest.raises(ReviewError, match="based_on must be an event id"):
        review(store, "a1", based_on="3")


def test_unbound_saves_by_two_reviewers_are_a_conflict(store):
    alice = review(store, "a1", reviewer="alice", removed=["a4"])
    bob = review(store, "a1", reviewer="bob")
    conflicts = store.conflicts()
    assert conflicts["kind"].tolist() == ["reviewers_disagree"]
    row = conflicts.iloc[0]
    assert row["sampled_record"] == "a1"
    assert (row["reviewer"], row["event_id"]) == ("alice", alice.event_id)
    assert (row["other_reviewer"], row["other_event_id"]) == ("bob", bob.event_id)
    # Same true cluster: no disagreement.
    review(store, "b1", reviewer="alice")
    review(store, "b1", reviewer="bob")
    assert store.conflicts()["sampled_record"].tolist() == ["a1"]
    # An adjudication settles it and is the decision in force.
    final = review(
        store, "a1", reviewer="cy", removed=["a4"], adjudication=True, based_on=bob.event_id
    )
    assert store.conflicts().empty
    assert store.decision("a1") == final
    assert store.decision("a1", reviewer="bob") == bob


def test_double_review_is_independent_and_blind(store):
    alice = review(store, "a1", reviewer="alice", removed=["a4"], based_on=None, independent=True)
    # Bob never saw Alice's decision: his first save is based on nothing of his own.
    bob = review(store, "a1", reviewer="bob", based_on=None, independent=True)
    with pytest.raises(StaleReviewError):
        review(store, "a1", reviewer="bob", based_on=None, independent=True)
    review(store, "a1", reviewer="bob", removed=["a3"], based_on=bob.event_id, independent=True)
    assert store.decision("a1", reviewer="alice") == alice
    assert store.conflicts()["kind"].tolist() == ["reviewers_disagree"]
    # Under each reviewer's own decisions the benchmark differs.
    alice_truth = store.true_clusters(reviewer="alice")
    bob_truth = store.true_clusters(reviewer="bob")
    assert "a4" not in alice_truth.index and "a4" in bob_truth.index
    assert "a3" in alice_truth.index and "a3" not in bob_truth.index


def test_adjudication_undo_falls_back_to_the_latest_review(store):
    review(store, "a1", reviewer="alice", removed=["a4"])
    bob = review(store, "a1", reviewer="bob")
    review(store, "a1", reviewer="cy", removed=["a4"], adjudication=True)
    store.undo(reviewer="cy", sampled_record="a1")
    assert store.decision("a1") == bob
    assert store.conflicts()["kind"].tolist() == ["reviewers_disagree"]
