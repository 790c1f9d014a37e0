"""Durability: SIGKILL a process in the middle of saving reviews; nothing acknowledged is lost.

The child writes reviews (and some undos) in a loop through :class:`ReviewStore`, the code
path the app uses, and prints the id of every event whose save returned, flushed. The test
kills it at random moments (large notes make each transaction span many pages, so kills
land inside writes), restarts it on the same file several times, and checks after every
kill that the store opens, passes SQLite's integrity check, and holds every acknowledged
event with its content.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from er_evaluation.review import ReviewStore

CHILD = textwrap.dedent(
    """
    import random
    import sys
    from er_evaluation.review import ReviewStore

    store = ReviewStore(sys.argv[1])
    rng = random.Random(int(sys.argv[2]))
    print("ready", flush=True)
    i = 0
    while True:
        i += 1
        sampled = f"s{rng.randrange(20)}"
        if rng.random() < 0.15 and store.decision(sampled) is not None:
            event = store.undo(reviewer="child", sampled_record=sampled)
        else:
            shown = [sampled] + [f"m{k}" for k in range(rng.randrange(1, 30))]
            event = store.record_review(
                reviewer="child",
                sampled_record=sampled,
                predicted_cluster=f"c-{sampled}",
                shown_records=shown,
                removed=shown[1 : 1 + rng.randrange(3)],
                added=[f"x{rng.randrange(1000)}"] if rng.random() < 0.5 else [],
                notes=f"note {sys.argv[2]}-{i} " + "z" * rng.randrange(200_000),
            )
        print(event.event_id, event.status, len(event.notes), flush=True)
    """
)


def _acknowledged(output: bytes) -> dict[int, tuple[str, int]]:
    """Complete lines ``event_id status notes_length``; a line cut by the kill is not an
    acknowledgement (its save may or may not have committed)."""
    acks = {}
    for line in output.split(b"\n")[:-1]:
        parts = line.decode().split()
        if parts and parts[0] != "ready":
            acks[int(parts[0])] = (parts[1], int(parts[2]))
    return acks


def _run_and_kill(path, seed: int, rng: random.Random) -> dict[int, tuple[str, int]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout.readline().strip() == b"ready", proc.stderr.read().decode()
        first = proc.stdout.readline()  # at least one save done before the kill window
        time.sleep(rng.uniform(0.0, 0.6))
        os.kill(proc.pid, signal.SIGKILL)
        rest, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, err.decode()
    return _acknowledged(first + rest)


@pytest.mark.slow
def test_sigkill_during_saves_loses_no_acknowledged_event(tmp_path):
    path = tmp_path / "reviews.sqlite"
    rng = random.Random(20261122)
    acknowledged: dict[int, tuple[str, int]] = {}
    for round_ in range(5):
        acks = _run_and_kill(path, seed=round_, rng=rng)
        assert acks, "the child acknowledged no save before being killed"
        acknowledged.update(acks)

        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.close()
        store = ReviewStore(path)  # reopens (and recovers the WAL) after the kill
        events = store.events().set_index("event_id")
        missing = sorted(set(acknowledged) - set(events.index))
        assert not missing, f"round {round_}: acknowledged events lost: {missing}"
        for event_id, (status, notes_length) in acknowledged.items():
            assert events.loc[event_id, "status"] == status
            assert len(events.loc[event_id, "notes"]) == notes_length
        # Derived views still work on the recovered store.
        store.decisions()
        assert store.reviewed_records() <= {f"s{k}" for k in range(20)}

    # The store stays writable after the crashes.
    after = ReviewStore(path).record_review(
        reviewer="parent", sampled_record="p", predicted_cluster="c", shown_records=["p"]
    )
    assert after.event_id > max(acknowledged)
