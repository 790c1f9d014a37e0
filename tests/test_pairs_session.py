"""Resumable labelling sessions and the ``er-eval pairs`` CLI."""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pandas as pd
import pytest
from _helpers import rewrite_as_old_log

from er_evaluation.cli import main
from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.pairs import (
    METHODS,
    LabellingSession,
    LabelOracle,
    PairPool,
    SessionError,
    make_sampler,
    read_log,
    sample_labels,
)
from er_evaluation.pairs.oracles import CountingOracle


def make_pool(n=300, seed=0) -> PairPool:
    rng = np.random.default_rng(seed)
    label = (rng.random(n) < 0.1).astype(int)
    score = label + rng.normal(0, 0.6, n)
    frame = pd.DataFrame(
        {
            "id_left": [f"a{i}" for i in range(n)],
            "id_right": [f"b{i}" for i in range(n)],
            "score": score,
            "predicted": (score > 0.5).astype(int),
            "label": label,
        }
    )
    return PairPool.from_frame(frame, label_col="label")


def snapshot(session: LabellingSession):
    run = session.label_run()
    return (
        run.index.tolist(),
        run.label.tolist(),
        run.weight.tolist(),
        run.new_label.tolist(),
        session.sampler.rng.bit_generator.state,
    )


@pytest.mark.parametrize("method", METHODS)
def test_session_resumes_bit_identically(tmp_path, method):
    pool = make_pool()
    oracle = LabelOracle(pool.labels)
    with LabellingSession(pool, tmp_path / "full.jsonl", method, seed=7) as full:
        full.run(oracle, 80)
        expected = snapshot(full)
        expected_estimate = full.estimate().to_frame()
    with LabellingSession(pool, tmp_path / "split.jsonl", method, seed=7) as first:
        first.run(oracle, 30)
    with LabellingSession(pool, tmp_path / "split.jsonl") as second:
        assert second.n_labels == 30
        second.run(oracle, 55)
    with LabellingSession(pool, tmp_path / "split.jsonl") as third:
        third.run(oracle, 80)
        assert snapshot(third) == expected
        pd.testing.assert_frame_equal(third.estimate().to_frame(), expected_estimate)


def test_person_answers_unsure_and_pending_pair_survive_restart(tmp_path):
    pool = make_pool()
    path = tmp_path / "labels.jsonl"
    session = LabellingSession(pool, path, "oasis", seed=1)
    first = session.next_pair()
    session.answer("match")
    second = session.next_pair()
    session.answer("unsure")
    third = session.next_pair()
    session.close()  # closed with `third` still pending (never answered)
    assert session.n_labels == 1 and session.n_unsure == 1

    resumed = LabellingSession(pool, path)
    assert resumed.n_labels == 1 and resumed.n_unsure == 1 and resumed.n_draws == 1
    assert resumed.next_pair().index == third.index  # the same pair is handed out again
    resumed.answer(False)
    resumed.close()
    header, events = read_log(path)
    assert header["method"] == "oasis" and header["seed"] == 1
    assert [e["answer"] for e in events] == ["match", "unsure", "non-match"]
    assert [e["pool_index"] for e in events] == [first.index, second.index, third.index]
    assert events[1]["label"] is None and events[0]["label"] == 1
    # every label keeps its sampling probability and weight
    assert all(e["prob"] > 0 and e["weight"] > 0 for e in events)
    assert events[0]["weight"] == pytest.approx(1 / (pool.n_pairs * events[0]["prob"]))


def test_unsure_answers_are_not_labels(tmp_path):
    pool = make_pool()
    answers = iter([None, 1, None, 0, 0])
    with LabellingSession(pool, tmp_path / "l.jsonl", "passive", seed=0) as session:
        for answer in answers:
            session.next_pair()
            session.answer(answer)
        assert session.n_labels == 3 and session.n_unsure == 2 and session.n_draws == 3
        assert session.label_run().label.tolist() == [1, 0, 0]


def test_session_cache_never_asks_twice(tmp_path):
    pool = make_pool(n=40)
    oracle = CountingOracle(LabelOracle(pool.labels))
    with LabellingSession(pool, tmp_path / "l.jsonl", "oasis", seed=3, n_strata=3) as session:
        session.run(oracle, 35)
        assert len(oracle.asked) == len(set(oracle.asked)) == 35
        assert session.n_draws >= 35
        _, events = read_log(session.path)
    sources = {e["source"] for e in events}
    assert "oracle" in sources
    assert sum(e["source"] != "cache" for e in events) == 35


def test_torn_last_line_is_cut_off_with_a_warning(tmp_path):
    pool = make_pool()
    path = tmp_path / "l.jsonl"
    with LabellingSession(pool, path, "oasis", seed=2) as session:
        session.run(LabelOracle(pool.labels), 10)
    with open(path, "ab") as handle:
        handle.write(b'{"type": "draw", "step": 10, "pool_in')
    with pytest.warns(UserWarning, match="not completely written"):
        resumed = LabellingSession(pool, path)
    assert resumed.n_labels == 10
    resumed.run(LabelOracle(pool.labels), 12)
    resumed.close()
    header, events = read_log(path)
    assert len(events) == resumed.n_draws


def test_log_from_another_pool_or_seed_is_refused(tmp_path):
    pool = make_pool()
    path = tmp_path / "l.jsonl"
    with LabellingSession(pool, path, "oasis", seed=2) as session:
        session.run(LabelOracle(pool.labels), 5)
    with pytest.raises(SessionError, match="another pool"):
        LabellingSession(make_pool(seed=9), path)
    with pytest.raises(SessionError, match="seed 2, not 3"):
        LabellingSession(pool, path, seed=3)
    with pytest.raises(SessionError, match="'oasis' session, not 'passive'"):
        LabellingSession(pool, path, "passive")
    lines = path.read_text().splitlines()
    event = json.loads(lines[2])
    event["pool_index"] = (event["pool_index"] + 1) % pool.n_pairs
    lines[2] = json.dumps(event)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SessionError, match="line 3"):
        LabellingSession(pool, path)


def test_answer_without_pending_pair_and_bad_answer(tmp_path):
    pool = make_pool()
    with LabellingSession(pool, tmp_path / "l.jsonl", "passive", seed=0) as session:
        with pytest.raises(SessionError, match="no pair is waiting"):
            session.answer(1)
        session.next_pair()
        with pytest.raises(ValueError, match="not match / non-match / unsure"):
            session.answer("maybe")


# --- CLI ------------------------------------------------------------------------------


def write_pool_files(tmp_path, n=300):
    pool = make_pool(n)
    frame = pool.pairs.copy()
    frame.to_csv(tmp_path / "pool.csv", index=False)
    # a reference clustering reproducing the labels: matched pairs share a cluster
    ids = pd.concat([frame.id_left, frame.id_right]).to_numpy()
    clusters = {i: i for i in ids}
    for a, b, lab in zip(frame.id_left, frame.id_right, frame.label, strict=False):
        if lab:
            clusters[b] = a
    pd.DataFrame({"record_id": list(clusters), "cluster_id": list(clusters.values())}).to_csv(
        tmp_path / "reference.csv", index=False
    )
    return pool


def test_cli_sample_with_reference_then_estimate(tmp_path, capsys):
    pool = write_pool_files(tmp_path)
    labels = tmp_path / "labels.jsonl"
    args = ["pairs", "sample", str(tmp_path / "pool.csv"), "--labels", str(labels)]
    assert (
        main([*args, "--oracle", f"reference:{tmp_path / 'reference.csv'}", "--budget", "60"]) == 0
    )
    assert (
        main([*args, "--oracle", f"reference:{tmp_path / 'reference.csv'}", "--budget", "90"]) == 0
    )
    capsys.readouterr()
    assert (
        main(
            [
                "pairs",
                "estimate",
                str(tmp_path / "pool.csv"),
                "--labels",
                str(labels),
                "--format",
                "json",
                "--beta",
                "1",
                "2",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"pairwise_precision", "pairwise_recall", "pairwise_f1", "pairwise_f2"}
    p, r = out["pairwise_precision"]["value"], out["pairwise_recall"]["value"]
    # F_beta = (1 + beta^2) / (beta^2 / R + 1 / P); F_2 = 1 / (0.2 / P + 0.8 / R)
    assert out["pairwise_f2"]["value"] == pytest.approx(1 / (0.2 / p + 0.8 / r))
    assert out["pairwise_f1"]["n_units"] == 90
    # the labels in the log are the reference's
    _, events = read_log(labels)
    assert all(e["label"] == pool.labels[e["pool_index"]] for e in events)
    with LabellingSession(pool, labels, readonly=True) as session:
        # same numbers as the library computes from the replayed log
        assert session.estimate().f[0].value == pytest.approx(out["pairwise_f1"]["value"])


def test_cli_interactive_prompts_and_resumes(tmp_path, monkeypatch, capsys):
    write_pool_files(tmp_path)
    labels = tmp_path / "labels.jsonl"
    args = [
        "pairs",
        "sample",
        str(tmp_path / "pool.csv"),
        "--labels",
        str(labels),
        "--method",
        "passive",
        "--budget",
        "10",
    ]
    monkeypatch.setattr(sys, "stdin", io.StringIO("m\nwhat\nn\nu\nq\n"))
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "'what' is not an answer: type m (match)" in err and "run the same command again" in err
    _, events = read_log(labels)
    assert [e["answer"] for e in events] == ["match", "non-match", "unsure"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))  # EOF after one answer also saves
    assert main(args) == 0
    _, events = read_log(labels)
    assert [e["answer"] for e in events] == ["match", "non-match", "unsure", "non-match"]


def test_cli_errors_are_clear(tmp_path, capsys):
    write_pool_files(tmp_path)
    code = main(
        [
            "pairs",
            "sample",
            str(tmp_path / "pool.csv"),
            "--labels",
            str(tmp_path / "l.jsonl"),
            "--oracle",
            "column:nope",
        ]
    )
    assert code == 1 and "no such column" in capsys.readouterr().err
    code = main(
        [
            "pairs",
            "estimate",
            str(tmp_path / "pool.csv"),
            "--labels",
            str(tmp_path / "missing.jsonl"),
        ]
    )
    assert code == 1 and "no such label log" in capsys.readouterr().err


def test_cli_resume_keeps_the_logs_sampler_and_refuses_flags_it_has_no_use_for(tmp_path, capsys):
    pool = write_pool_files(tmp_path)
    labels = tmp_path / "l.jsonl"
    args = ["pairs", "sample", str(tmp_path / "pool.csv"), "--labels", str(labels)]
    args += ["--oracle", "column:label"]
    new = ["--method", "ais", "--seed", "3", "--strata", "16", "--epsilon", "0.01"]
    assert main([*args, *new, "--budget", "20"]) == 0
    header, _ = read_log(labels)
    assert (header["method"], header["seed"]) == ("ais", 3)
    assert (header["params"]["n_strata"], header["params"]["epsilon"]) == (16, 0.01)
    # resumed without repeating the flags: the log's own method, seed and parameters
    assert main([*args, "--budget", "30"]) == 0
    with LabellingSession(pool, labels, readonly=True) as session:
        assert session.n_labels == 30 and session.header["params"] == header["params"]
    capsys.readouterr()
    # a flag the method has no parameter for is an error, for a new log and a resumed one
    other = ["pairs", "sample", str(tmp_path / "pool.csv"), "--labels", str(tmp_path / "p.jsonl")]
    other += ["--oracle", "column:label", "--method", "passive", "--budget", "5"]
    assert main([*other, "--epsilon", "0.5"]) == 1
    assert "sampling method 'passive' has no parameter epsilon" in capsys.readouterr().err
    # five pairs drawn at random from a pool with few matches: no true match among them
    with pytest.warns(
        UndefinedMetricWarning, match="pairwise_recall is undefined: no sampled pair"
    ):
        assert main(other) == 0
    assert main([*other, "--strata", "7"]) == 1
    err = capsys.readouterr().err
    assert "is a 'passive' session, which has no parameter 'n_strata'" in err
    # a different value than the log's is refused, naming both
    assert main([*args, "--epsilon", "0.2", "--budget", "31"]) == 1
    assert "was started with --epsilon 0.01, not 0.2" in capsys.readouterr().err


def test_cli_prediction_from_clustering_and_column_oracle(tmp_path, capsys):
    pool = write_pool_files(tmp_path)
    frame = pool.pairs
    # a predicted clustering that links exactly the pairs with predicted == 1
    clusters = {i: i for i in pd.concat([frame.id_left, frame.id_right])}
    for a, b, p in zip(frame.id_left, frame.id_right, frame.predicted, strict=True):
        if p:
            clusters[b] = a
    pd.DataFrame({"record_id": list(clusters), "cluster_id": list(clusters.values())}).to_csv(
        tmp_path / "prediction.csv", index=False
    )
    labels = tmp_path / "labels.jsonl"
    common = [
        str(tmp_path / "pool.csv"),
        "--labels",
        str(labels),
        "--prediction",
        str(tmp_path / "prediction.csv"),
    ]
    assert (
        main(
            [
                "pairs",
                "sample",
                *common,
                "--method",
                "importance",
                "--oracle",
                "column:label",
                "--budget",
                "40",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    sampled = capsys.readouterr().out
    assert main(["pairs", "estimate", *common, "--format", "csv"]) == 0
    assert capsys.readouterr().out == sampled
    with LabellingSession(pool, labels, readonly=True) as session:  # same pool: same predictions
        assert session.n_labels == 40 and session.header["method"] == "importance"


# --- several writers on one log --------------------------------------


def _assert_log_consistent(path, pool):
    """Steps 0..n-1 once each, every pair answered by a person/oracle at most once (unsure
    aside), and a fresh session replays the whole log."""
    _, events = read_log(path)
    assert [e["step"] for e in events] == list(range(len(events)))
    answered = [
        e["pool_index"] for e in events if e["source"] != "cache" and e["label"] is not None
    ]
    assert len(answered) == len(set(answered))
    with LabellingSession(pool, path, readonly=True) as replay:
        assert replay.n_labels == len(answered)
        assert (replay.label_run().label == pool.labels[replay.label_run().index]).all()
    return events


def test_two_tabs_on_one_log_record_each_answer_once(tmp_path):
    pool = make_pool()
    path = tmp_path / "shared.jsonl"
    tab_a = LabellingSession(pool, path, "oasis", seed=4)
    tab_b = LabellingSession(pool, path)
    truth = pool.labels
    # both tabs show the same pair; A answers first, B's answer to it is not recorded
    pa, pb = tab_a.next_pair(), tab_b.next_pair()
    assert pa.index == pb.index
    assert tab_a.answer(int(truth[pa.index])) is True
    assert tab_b.answer(1 - int(truth[pb.index])) is False
    # B moves on from the shared state: its next pair is A's next pair
    nb = tab_b.next_pair()
    na = tab_a.next_pair()
    assert nb.index == na.index and nb.step == na.step > pa.step
    assert tab_b.answer(int(truth[nb.index])) is True
    assert tab_a.answer(int(truth[na.index])) is False
    # interleaved labelling, with unsure answers, in both tabs
    for i in range(30):
        tab = tab_a if i % 3 else tab_b
        pending = tab.next_pair()
        tab.answer(None if i % 7 == 0 else int(truth[pending.index]))
    tab_a.next_pair(), tab_b.next_pair()  # both take in the other's answers
    assert tab_a.n_labels == tab_b.n_labels and tab_a.n_unsure == tab_b.n_unsure
    tab_a.close()
    tab_b.close()
    events = _assert_log_consistent(path, pool)
    # a third session resumes where both left off
    with LabellingSession(pool, path) as resumed:
        assert resumed.n_draws + resumed.n_unsure == len(events)
        resumed.run(LabelOracle(pool.labels), resumed.n_labels + 5)
    _assert_log_consistent(path, pool)


_WRITER = """
import sys
import pandas as pd
from er_evaluation.pairs import LabellingSession, LabelOracle, PairPool
pool = PairPool(pd.read_parquet(sys.argv[1]))
with LabellingSession(pool, sys.argv[2], "oasis", seed=1) as session:
    oracle = LabelOracle(pool.labels)
    for _ in range(int(sys.argv[3])):
        pending = session.next_pair()
        session.answer(oracle(pending.index))
"""


@pytest.mark.slow
def test_two_processes_on_one_log(tmp_path):
    import subprocess

    pool = make_pool(n=400)
    pool_file = tmp_path / "pool.parquet"
    pool.pairs.to_parquet(pool_file)
    path = tmp_path / "shared.jsonl"
    LabellingSession(pool, path, "oasis", seed=1).close()
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(pool_file), str(path), "60"])
        for _ in range(2)
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    events = _assert_log_consistent(path, pool)
    answered = [e for e in events if e["source"] != "cache"]
    assert 60 <= len(answered) <= 120


def test_unreadable_log_lines_name_the_line_and_why(tmp_path):
    pool = make_pool()
    path = tmp_path / "l.jsonl"
    with LabellingSession(pool, path, "passive", seed=0) as session:
        session.run(LabelOracle(pool.labels), 4)
    lines = path.read_text().splitlines()
    cases = [
        (2, "not json at all", "line 3: not valid JSON"),
        (2, json.dumps({**json.loads(lines[2]), "label": "yes"}), "line 3: label is 'yes'"),
        (
            3,
            json.dumps({k: v for k, v in json.loads(lines[3]).items() if k != "step"}),
            "line 4: the draw has no 'step'",
        ),
        (1, "[1, 2]", "line 2: not a JSON object"),
        (0, json.dumps({"type": "draw"}), "line 1: not a label-log header"),
    ]
    for row, text, message in cases:
        broken = list(lines)
        broken[row] = text
        path.write_text("\n".join(broken) + "\n")
        with pytest.raises(SessionError, match=message):
            LabellingSession(pool, path)


def test_log_with_a_step_written_twice_by_an_old_version_still_resumes(tmp_path):
    pool = make_pool()
    path = tmp_path / "l.jsonl"
    with LabellingSession(pool, path, "oasis", seed=3) as session:
        session.run(LabelOracle(pool.labels), 6)
        expected = session.label_run().index.tolist()
    lines = path.read_text().splitlines()
    lines.insert(4, lines[3])  # the same step appended by a second tab before locking
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match="line 5: a second answer to step"):
        resumed = LabellingSession(pool, path)
    assert resumed.label_run().index.tolist() == expected
    resumed.close()


def test_oasis_log_from_before_the_prior_decay_still_replays(tmp_path):
    pool = make_pool()
    path = tmp_path / "l.jsonl"
    with LabellingSession(pool, path, "oasis", seed=5, eta=40.0, decay=False) as session:
        session.run(LabelOracle(pool.labels), 15)
        expected = session.label_run().index.tolist()
    # headers written before decay existed lack it
    rewrite_as_old_log(path, lambda header: header["params"].pop("decay"))
    with LabellingSession(pool, path, readonly=True) as resumed:
        assert resumed.label_run().index.tolist() == expected


@pytest.mark.parametrize(
    ("method", "target", "beta", "alpha"),
    [
        ("oasis", "f", 2.0, 0.2),
        ("oasis", "f", 0.7, 1 / (1 + 0.7**2)),
        ("oasis", "precision", 1.0, 1.0),
        ("importance", "recall", 1.0, 0.0),
        ("ais", "f", 1.0, 0.5),
    ],
)
def test_log_written_with_the_f_weight_alpha_replays_as_its_target_and_beta(
    tmp_path, method, target, beta, alpha
):
    """Headers written when the samplers took OASIS's weight alpha = 1 / (1 + beta^2)
    (1: precision, 0: recall) replay the same draws under target and beta."""
    pool = make_pool()
    path = tmp_path / "l.jsonl"
    with LabellingSession(pool, path, method, seed=3, target=target, beta=beta) as session:
        session.run(LabelOracle(pool.labels), 15)
        expected = session.label_run().index.tolist()

    def as_alpha(header):
        del header["params"]["beta"]
        if method != "ais":
            del header["params"]["target"]
        header["params"]["alpha"] = alpha

    rewrite_as_old_log(path, as_alpha)
    with LabellingSession(pool, path, readonly=True) as resumed:
        assert resumed.label_run().index.tolist() == expected
        assert resumed.sampler.target == target


# --- several writers and unreadable logs through the CLI -----------------


@pytest.mark.filterwarnings("ignore::er_evaluation.errors.UndefinedMetricWarning")
def test_cli_interactive_answer_to_a_pair_another_reviewer_answered_first(
    tmp_path, monkeypatch, capsys
):
    """A second reviewer (here: a library session on the same log) answers the pair on the
    prompt first: the prompt's answer is not recorded and the person is told so (it was
    silently dropped), and the prompt goes on with the next pair."""
    pool = write_pool_files(tmp_path)
    labels = tmp_path / "labels.jsonl"
    args = ["pairs", "sample", str(tmp_path / "pool.csv"), "--labels", str(labels)]
    args += ["--method", "oasis", "--seed", "2", "--budget", "5"]
    answered, calls = [], []

    class Prompt:
        """Before the first answer ("n") the other reviewer gives the same pair its true
        label; then one more "n" for the next pair, then quit."""

        def readline(self):
            calls.append(1)
            if len(calls) == 1:
                with LabellingSession(pool, labels) as other:
                    pending = other.next_pair()
                    other.answer(int(pool.labels[pending.index]))
                    answered.append(pending.index)
            return "n\n" if len(calls) <= 2 else "q\n"

    monkeypatch.setattr(sys, "stdin", Prompt())
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "was answered meanwhile by another session on this log" in err
    _, events = read_log(labels)
    first = [e for e in events if e["pool_index"] == answered[0] and e["source"] != "cache"]
    assert [e["label"] for e in first] == [int(pool.labels[answered[0]])]
    assert [e["step"] for e in events] == list(range(len(events)))
    # one more person answer after the refused one: the other reviewer's and this one
    assert sum(e["source"] == "person" for e in events) == 2


@pytest.mark.slow
def test_cli_two_processes_sampling_into_one_log(tmp_path):
    """Two `er-eval pairs sample` processes with an oracle on one log: both finish, every
    pair is answered once, the log replays and `pairs estimate` reads it."""
    import subprocess

    pool = write_pool_files(tmp_path, n=400)
    labels = tmp_path / "labels.jsonl"
    command = [sys.executable, "-m", "er_evaluation", "pairs", "sample", str(tmp_path / "pool.csv")]
    command += ["--labels", str(labels), "--oracle", "column:label", "--budget", "80"]
    procs = [
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    _assert_log_consistent(labels, pool)
    with LabellingSession(pool, labels, readonly=True) as session:
        assert session.n_labels == 80
    done = subprocess.run(
        [sys.executable, "-m", "er_evaluation", "pairs", "estimate", str(tmp_path / "pool.csv")]
        + ["--labels", str(labels), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pairwise_f1"]["n_units"] == 80


@pytest.mark.parametrize("action", ["sample", "estimate"])
def test_cli_names_the_unreadable_line_of_a_label_log(tmp_path, capsys, action):
    pool = write_pool_files(tmp_path)
    labels = tmp_path / "labels.jsonl"
    with LabellingSession(pool, labels, "passive", seed=0) as session:
        session.run(LabelOracle(pool.labels), 5)
    lines = labels.read_text().splitlines()
    lines[3] = lines[3].replace('"label": ', '"label": "yes", "was": ', 1)
    labels.write_text("\n".join(lines) + "\n")
    args = ["pairs", action, str(tmp_path / "pool.csv"), "--labels", str(labels)]
    if action == "sample":
        args += ["--oracle", "column:label", "--budget", "8"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"{labels}, line 4: label is 'yes'" in err
    assert "Traceback" not in err
    assert labels.read_text().splitlines() == lines  # nothing written to a bad log


def test_a_run_counts_the_labels_another_session_wrote_towards_its_budget(tmp_path):
    """Two processes sampling to 80 labels on one log made 81: a run checked its budget
    before taking in the other's answers, then answered one pair more."""
    pool = make_pool()
    path = tmp_path / "shared.jsonl"
    oracle = LabelOracle(pool.labels)
    first = LabellingSession(pool, path, "oasis", seed=1)
    second = LabellingSession(pool, path)  # opened before the first labels anything
    assert first.run(oracle, 5) == 5
    assert second.run(oracle, 5) == 0  # the log already holds 5 labels
    assert second.run(oracle, 7) == 2
    first.close()
    second.close()
    with LabellingSession(pool, path, readonly=True) as replay:
        assert replay.n_labels == 7
    _assert_log_consistent(path, pool)


# --- one stopping rule for a budget ----------------------------------------------------------


@pytest.mark.parametrize("method", ["oasis", "importance", "ais"])
def test_cli_session_sample_labels_and_two_writers_give_the_same_draws(tmp_path, method):
    """The same seed and budget give the same draws in sample_labels, a library session,
    the CLI and two sessions sharing one log (each run stops right after the draw that
    paid for the budget's last label; sample_labels used to keep the free repeats after
    it: 4,519 draws against the session's 4,514)."""
    pool = write_pool_files(tmp_path)
    budget = 40
    oracle = LabelOracle(pool.labels)
    run = sample_labels(pool, make_sampler(method, pool, 11), oracle, budget)
    assert run.n_labels == budget and run.new_label[-1]
    with LabellingSession(pool, tmp_path / "lib.jsonl", method, seed=11) as session:
        session.run(oracle, budget)
        assert session.label_run().index.tolist() == run.index.tolist()
    cli_log = tmp_path / "cli.jsonl"
    args = ["pairs", "sample", str(tmp_path / "pool.csv"), "--labels", str(cli_log)]
    args += ["--method", method, "--seed", "11", "--budget", str(budget)]
    assert main([*args, "--oracle", f"reference:{tmp_path / 'reference.csv'}"]) == 0
    _, events = read_log(cli_log)
    assert [e["pool_index"] for e in events] == run.index.tolist()
    shared = tmp_path / "shared.jsonl"
    first = LabellingSession(pool, shared, method, seed=11)
    second = LabellingSession(pool, shared)
    while first.n_labels < budget:  # two writers take turns on one log
        for session in (first, second):
            if (pair := session.next_pair(budget=budget)) is not None:
                session.answer(int(pool.labels[pair.index]), index=pair.index)
    for session in (first, second):
        session.close()
    _, events = read_log(shared)
    assert [e["pool_index"] for e in events] == run.index.tolist()


# --- the live stopping signal -------------------------------------------------------------


@pytest.mark.slow
def test_cli_shows_the_widths_after_each_answer_and_stops_at_a_target_width(
    tmp_path, monkeypatch, capsys
):
    pool = write_pool_files(tmp_path)
    labels = tmp_path / "labels.jsonl"
    args = ["pairs", "sample", str(tmp_path / "pool.csv"), "--labels", str(labels)]
    args += ["--method", "passive", "--budget", "10"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("m\nn\nn\nq\n"))
    assert main(args) == 0
    err = capsys.readouterr().err
    assert err.count("interval widths after") == 4  # 3 answers, then once at the end
    assert "interval widths after 3 labels: precision" in err
    # with an oracle and a target: stops once every interval is that wide and reliable
    auto = tmp_path / "auto.jsonl"
    args = ["pairs", "sample", str(tmp_path / "pool.csv"), "--labels", str(auto)]
    args += ["--oracle", f"reference:{tmp_path / 'reference.csv'}", "--budget", "200"]
    assert main([*args, "--target-width", "0.5"]) == 0
    err = capsys.readouterr().err
    assert "target width 0.5 reached" in err
    with LabellingSession(pool, auto, readonly=True) as session:
        assert session.n_labels < 200
        widths = session.widths(0.5)
        assert widths.reached and max(widths.widths.values()) <= 0.5
        # the labels before the last did not reach it (the first stop, not a later one)
        run = session.label_run()
        with LabellingSession(pool, tmp_path / "again.jsonl", "oasis", seed=0) as again:
            again.run(LabelOracle(pool.labels), session.n_labels - 1)
            assert again.label_run().index.tolist() == run.index[: again.n_draws].tolist()
            assert not again.widths(0.5).reached
    assert main([*args, "--target-width", "1.5"]) == 1
    assert "--target-width must be a number in (0, 1], got 1.5" in capsys.readouterr().err
