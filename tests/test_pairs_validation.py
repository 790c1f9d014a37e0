"""Bad inputs to the pair samplers, runs, sessions and estimates get clear errors: one
case per input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from er_evaluation.cli import main
from er_evaluation.pairs import (
    CallableOracle,
    LabellingSession,
    LabelOracle,
    PairPool,
    PoolError,
    SessionError,
    continue_sampling,
    estimate_from_labels,
    estimate_history,
    estimate_measure,
    f_measures,
    make_sampler,
    read_log,
    reuse_estimate,
    sample_labels,
)


def small_pool(n=60) -> PairPool:
    rng = np.random.default_rng(0)
    label = (rng.random(n) < 0.3).astype(int)
    score = label + rng.normal(0, 0.5, n)
    frame = pd.DataFrame(
        {
            "id_left": np.arange(n),
            "id_right": np.arange(n) + n,
            "score": score,
            "predicted": (score > 0.5).astype(int),
            "label": label,
        }
    )
    return PairPool.from_frame(frame, label_col="label")


@pytest.fixture(scope="module")
def labelled():
    pool = small_pool()
    run = sample_labels(pool, make_sampler("passive", pool, 0), LabelOracle(pool.labels), 30)
    return pool, run


@pytest.mark.parametrize(
    "predicted, message",
    [
        (
            lambda p: np.where(p == 1, 2, 0),
            r"predicted must be 0/1 per pool pair; pairs \[.*\] have \[2",
        ),
        (lambda p: p.astype(float) * 0.5, "predicted must be 0/1"),
        (lambda p: p[:-1], "one 0/1 value per pool pair"),
    ],
    ids=["two", "fraction", "short"],
)
def test_prediction_not_zero_one_is_an_error(labelled, predicted, message):
    """A prediction of 2 is refused (it would give a recall of 2.0)."""
    pool, run = labelled
    with pytest.raises(ValueError, match=message):
        estimate_from_labels(run, predicted(pool.predicted))
    with pytest.raises(ValueError, match=message):
        reuse_estimate(run, predicted(pool.predicted))


@pytest.mark.parametrize("answer", ["yes", 2, 0.5, float("nan"), "1"], ids=repr)
def test_oracle_answer_not_zero_one_is_an_error_naming_the_pair(answer):
    pool = small_pool()
    with pytest.raises(ValueError, match=r"the oracle answered .* for pool pair \d+"):
        sample_labels(pool, make_sampler("oasis", pool, 0), lambda i: answer, 5)


def test_label_oracle_of_a_pool_or_a_table_names_the_shape():
    """A PairPool (0-d object array) used to raise IndexError from the error message."""
    pool = small_pool()
    with pytest.raises(ValueError, match=r"1-D vector .* PairPool of shape \(\)"):
        LabelOracle(pool)
    with pytest.raises(ValueError, match=r"shape \(2, 3\)"):
        LabelOracle(np.zeros((2, 3), dtype=int))


@pytest.mark.parametrize("method", ["importance", "oasis", "ais"])
def test_every_pair_predicted_a_match_gives_recall_exact_without_warnings(method):
    """No predicted non-match exists, so no match can be missed: recall is the census
    point; the empty predicted-non-match cell used to divide 0 by 0 (RuntimeWarning)."""
    import warnings

    labels = np.array([1, 1, 0, 1, 1, 1])
    pool = PairPool(
        pd.DataFrame(
            {
                "id_left": np.arange(6),
                "id_right": np.arange(6) + 6,
                "score": np.linspace(0, 1, 6),
                "predicted": 1,
                "label": labels,
            }
        )
    )
    run = sample_labels(pool, make_sampler(method, pool, 0), LabelOracle(labels), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        recall = estimate_from_labels(run, pool.predicted).recall
    assert (recall.value, recall.ci_method) == (1.0, "census")
    assert recall.ci_low == recall.ci_high == 1.0


def test_oracle_answer_in_a_session_run_is_checked(tmp_path):
    pool = small_pool()
    with LabellingSession(pool, tmp_path / "l.jsonl", "passive", seed=0) as session:
        with pytest.raises(ValueError, match="the oracle answered 'yes' for pool pair"):
            session.run(lambda i: "yes", 3)


def test_label_vector_not_zero_one_is_an_error():
    with pytest.raises(ValueError, match=r"labels must be 0/1; pairs \[1\] have \[2\]"):
        LabelOracle(np.array([0, 2, 1]))


@pytest.mark.parametrize("method", ["oasis", "importance"])
@pytest.mark.parametrize("epsilon", [-0.1, 1.5, float("nan"), "0.1"], ids=repr)
def test_epsilon_outside_unit_interval_is_an_error(method, epsilon):
    pool = small_pool()
    with pytest.raises(ValueError, match="epsilon must be"):
        make_sampler(method, pool, 0, epsilon=epsilon)


@pytest.mark.parametrize("eta", [0.0, -2.0, float("nan"), float("inf")], ids=repr)
def test_oasis_prior_strength_must_be_positive(eta):
    with pytest.raises(ValueError, match="eta"):
        make_sampler("oasis", small_pool(), 0, eta=eta)


@pytest.mark.parametrize("beta", [-0.5, 0.0, float("inf"), float("nan"), "1"], ids=repr)
def test_sampler_beta_not_positive_is_an_error(beta):
    with pytest.raises(ValueError, match="beta must be a positive finite number"):
        make_sampler("oasis", small_pool(), 0, beta=beta)


def test_sampler_unknown_target_is_an_error():
    with pytest.raises(ValueError, match="target must be one of"):
        make_sampler("oasis", small_pool(), 0, target="f1")


@pytest.mark.parametrize("budget", [-1, 2.5, True], ids=repr)
def test_bad_budget_is_an_error(budget, tmp_path):
    pool = small_pool()
    with pytest.raises(ValueError, match="budget must be a whole number >= 0"):
        sample_labels(pool, make_sampler("passive", pool, 0), LabelOracle(pool.labels), budget)
    with LabellingSession(pool, tmp_path / "l.jsonl", "passive", seed=0) as session:
        with pytest.raises(ValueError, match="budget must be a whole number >= 0"):
            session.run(LabelOracle(pool.labels), budget)


@pytest.mark.parametrize("level", [0.0, 1.0, 95, -0.5, float("nan"), "0.9"], ids=repr)
def test_level_outside_open_unit_interval_is_an_error(labelled, level):
    pool, run = labelled
    with pytest.raises(ValueError, match="level must be"):
        estimate_from_labels(run, pool.predicted, level=level)
    with pytest.raises(ValueError, match="level must be"):
        estimate_history(run, pool.predicted, level=level)
    with pytest.raises(ValueError, match="level must be"):  # was a TypeError for "0.9"
        estimate_measure(run, f_measures(pool.predicted), level=level)


@pytest.mark.parametrize("beta", [-2.0, 0.0, float("inf"), float("nan")], ids=repr)
def test_estimate_beta_not_positive_is_an_error(labelled, beta):
    pool, run = labelled
    with pytest.raises(ValueError, match="beta must be a positive finite number"):
        estimate_from_labels(run, pool.predicted, beta=beta)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--epsilon", "1.5"], "epsilon must be in (0, 1]"),
        (["--epsilon", "nan"], "epsilon must be a finite number"),
        (["--budget", "-3"], "budget must be a whole number >= 0"),
    ],
)
def test_cli_bad_sampling_flags_are_clear_errors(tmp_path, capsys, flags, message):
    pool = small_pool()
    path = tmp_path / "pool.csv"
    pool.pairs.to_csv(path, index=False)
    args = ["pairs", "sample", str(path), "--labels", str(tmp_path / "l.jsonl")]
    args += ["--oracle", "column:label", *flags]
    assert main(args) != 0
    assert message in capsys.readouterr().err


def test_cli_bad_level_is_a_clear_error(tmp_path, capsys):
    pool = small_pool()
    path = tmp_path / "pool.csv"
    pool.pairs.to_csv(path, index=False)
    labels = tmp_path / "l.jsonl"
    base = ["pairs", "sample", str(path), "--labels", str(labels), "--oracle", "column:label"]
    assert main([*base, "--budget", "20", "--method", "passive"]) == 0
    capsys.readouterr()
    assert main(["pairs", "estimate", str(path), "--labels", str(labels), "--level", "95"]) != 0
    assert "level must be" in capsys.readouterr().err


# --- further invalid inputs -----------------------------------------------------


def test_a_float_zero_one_prediction_is_the_same_prediction(labelled):
    """A 0.0/1.0 column (what a CSV or a pandas mask gives) is accepted like the pool
    accepts it; it was refused with "pairs [] have []"."""
    pool, run = labelled
    as_int = estimate_from_labels(run, pool.predicted).to_frame()
    as_float = estimate_from_labels(run, pool.predicted.astype(float)).to_frame()
    pd.testing.assert_frame_equal(as_int, as_float)
    assert reuse_estimate(run, pool.predicted.astype(float)).f[0].value == pytest.approx(
        reuse_estimate(run, pool.predicted).f[0].value
    )


@pytest.mark.parametrize(
    "bad, shown",
    [(np.nan, "nan"), ("1", "'1'"), (None, "None")],
    ids=["nan", "text", "none"],
)
def test_a_prediction_with_nan_text_or_none_names_the_pairs(labelled, bad, shown):
    pool, run = labelled
    predicted = pool.predicted.astype(object)
    predicted[[3, 7]] = bad
    with pytest.raises(ValueError, match=rf"pairs \[3, 7\] have \[{shown}, {shown}\]"):
        estimate_from_labels(run, predicted)


@pytest.mark.parametrize("answer", ["yes", "match", 2, float("nan")], ids=repr)
def test_a_callable_oracle_is_held_to_the_oracle_rule(answer):
    """CallableOracle parsed words ("yes" became a match) where every other oracle refuses
    them; its errors did not name the pair."""
    pool = small_pool()
    oracle = CallableOracle(pool, lambda left, right: answer)
    with pytest.raises(ValueError, match=r"the oracle answered .* for pool pair \d+"):
        sample_labels(pool, make_sampler("passive", pool, 0), oracle, 5)


def test_a_callable_oracle_answers_true_false_one_zero_and_none():
    pool = small_pool()
    ids = zip(pool.pairs["id_left"], pool.pairs["id_right"], strict=True)
    truth = dict(zip(ids, pool.labels, strict=True))
    for kind in (bool, float, np.int8):
        oracle = CallableOracle(pool, lambda a, b, kind=kind: kind(truth[a, b]))
        run = sample_labels(pool, make_sampler("passive", pool, 0), oracle, 10)
        assert (run.label == pool.labels[run.index]).all()
    unsure = CallableOracle(pool, lambda a, b: None)
    assert unsure(0) is None


@pytest.mark.parametrize("max_draws", [-1, 0, 2.5, "9"], ids=repr)
def test_bad_max_draws_is_an_error(max_draws):
    """A negative max_draws used to give an empty run without a word."""
    pool = small_pool()
    with pytest.raises(ValueError, match="max_draws must be a whole number >= 1"):
        sample_labels(
            pool, make_sampler("passive", pool, 0), LabelOracle(pool.labels), 5, max_draws=max_draws
        )


@pytest.mark.parametrize(
    "known, message",
    [
        (
            lambda n: np.full(n, 3),
            r"known must be -1 \(unknown\), 0 or 1 per pool pair; pairs 0, 1",
        ),
        (lambda n: np.full(5, -1), r"known has shape \(5,\); expected one label per pool pair"),
    ],
    ids=["values", "shape"],
)
def test_bad_known_labels_are_an_error(known, message):
    """known = 3 everywhere was taken as 'every pair labelled' (an empty run); a short
    vector raised an IndexError."""
    pool = small_pool()
    with pytest.raises(PoolError, match=message):
        sample_labels(
            pool,
            make_sampler("passive", pool, 0),
            LabelOracle(pool.labels),
            5,
            known=known(pool.n_pairs),
        )


def test_a_sampler_of_another_pool_is_an_error():
    pool, other = small_pool(60), small_pool(40)
    with pytest.raises(PoolError, match="built on a pool of 40 pairs; this pool has 60"):
        sample_labels(pool, make_sampler("oasis", other, 0), LabelOracle(pool.labels), 5)


def test_a_pool_from_something_else_than_a_frame_is_an_error():
    with pytest.raises(PoolError, match="must be a pandas DataFrame, got dict"):
        PairPool.from_frame(small_pool().pairs.to_dict())


def test_a_text_score_is_named_as_text_not_as_a_missing_score():
    frame = small_pool().pairs.astype({"score": object})
    frame.loc[7, "score"] = "high"
    with pytest.raises(
        PoolError, match=r"column 'score' must hold numeric scores; rows 7 have 'high'"
    ):
        PairPool.from_frame(frame)


@pytest.mark.parametrize("seed", [-1, 1.5, "a", True], ids=repr)
def test_a_session_seed_must_be_a_whole_number(seed, tmp_path):
    """seed=1.5 was silently truncated to 1; -1 and "a" gave numpy's errors naming no seed."""
    with pytest.raises(ValueError, match="seed must be None or a whole number >= 0"):
        LabellingSession(small_pool(), tmp_path / "l.jsonl", "oasis", seed=seed)
    assert not (tmp_path / "l.jsonl").exists()


@pytest.mark.parametrize("sync_every", [0, -3, 1.5], ids=repr)
def test_a_session_sync_every_must_be_positive(sync_every, tmp_path):
    with pytest.raises(ValueError, match="sync_every must be a whole number >= 1"):
        LabellingSession(small_pool(), tmp_path / "l.jsonl", "oasis", sync_every=sync_every)


def _pool_file(tmp_path, frame=None):
    path = tmp_path / "pool.csv"
    (small_pool().pairs if frame is None else frame).to_csv(path, index=False)
    return path


def test_cli_bad_beta_is_refused_before_any_label(tmp_path, capsys):
    """A bad F weight was checked only after the budget was labelled (with a person at the
    prompt: after all their answers)."""
    path = _pool_file(tmp_path)
    labels = tmp_path / "l.jsonl"
    args = ["pairs", "sample", str(path), "--labels", str(labels), "--oracle", "column:label"]
    assert main([*args, "--beta", "-1"]) == 1
    assert "beta must be a positive finite number" in capsys.readouterr().err
    assert not labels.exists()


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("predicted", "yes", "pool.csv: column 'predicted' must be 0/1; rows 4 have 'yes'"),
        ("score", "abc", "pool.csv: column 'score' must hold numeric scores; rows 4 have 'abc'"),
        ("label", "2", "--oracle column:label: column 'label' must be 0/1; rows 4 have '2'"),
    ],
)
def test_cli_bad_pool_cells_name_the_file_or_flag_and_the_column(
    tmp_path, capsys, column, value, message
):
    frame = small_pool().pairs.astype({column: object})
    frame.loc[4, column] = value
    path = _pool_file(tmp_path, frame)
    args = ["pairs", "sample", str(path), "--labels", str(tmp_path / "l.jsonl")]
    assert main([*args, "--oracle", "column:label"]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cli_bad_seed_is_a_clear_error(tmp_path, capsys):
    path = _pool_file(tmp_path)
    args = ["pairs", "sample", str(path), "--labels", str(tmp_path / "l.jsonl")]
    assert main([*args, "--oracle", "column:label", "--seed", "-1"]) == 1
    assert "seed must be None or a whole number >= 0, got -1" in capsys.readouterr().err


@pytest.mark.parametrize("variance", ["bogus", "final"])
def test_a_variance_a_sampler_run_does_not_use_is_an_error(labelled, variance):
    """variance="final" (and any misspelling) was silently ignored for every run a sampler
    made: the caller got the default variance believing it was another."""
    pool, run = labelled
    with pytest.raises(ValueError, match="variance"):
        estimate_from_labels(run, pool.predicted, variance=variance)


# --- every public entry point refuses the same bad values, naming the parameter --------------

BAD_VALUES = [
    ("level", 1.5, "level must be"),
    ("level", "0.9", "level must be"),
    ("beta", -1.0, "beta must be a positive finite number"),
    ("ci_method", "wald", "ci_method must be one of .*; got 'wald'"),
]


def _estimate_entry_points(pool, run):
    return {
        "estimate_from_labels": lambda **kw: estimate_from_labels(run, pool.predicted, **kw),
        "estimate_history": lambda **kw: estimate_history(run, pool.predicted, **kw),
        "reuse_estimate": lambda **kw: reuse_estimate(run, pool.predicted, **kw),
    }


@pytest.mark.parametrize("entry", ["estimate_from_labels", "estimate_history", "reuse_estimate"])
@pytest.mark.parametrize(("name", "value", "message"), BAD_VALUES, ids=repr)
def test_estimate_entry_points_refuse_bad_values(labelled, entry, name, value, message):
    pool, run = labelled
    call = _estimate_entry_points(pool, run)[entry]
    with pytest.raises(ValueError, match=message):
        call(**{name: value})


@pytest.mark.parametrize(("name", "value", "message"), BAD_VALUES, ids=repr)
def test_estimate_measure_refuses_bad_values(labelled, name, value, message):
    pool, run = labelled
    if name == "beta":  # the measure carries its betas
        with pytest.raises(ValueError, match=message):
            f_measures(pool.predicted, betas=value)
        return
    with pytest.raises(ValueError, match=message):
        estimate_measure(run, f_measures(pool.predicted), **{name: value})


@pytest.mark.parametrize("method", ["passive", "stratified", "importance", "oasis", "ais"])
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"seed": -1}, "seed must be None or a whole number >= 0"),
        ({"seed": "0"}, "seed must be None or a whole number >= 0"),
        ({"seed": 1.5}, "seed must be None or a whole number >= 0"),
        ({"beta": -1.0}, "beta must be a positive finite number"),
        ({"beta": 0}, "beta must be a positive finite number"),
    ],
    ids=repr,
)
def test_samplers_refuse_bad_seeds_and_f_weights(method, params, message):
    pool = small_pool()
    params = dict(params)
    seed = params.pop("seed", 0)
    if method in ("passive", "stratified") and params:
        with pytest.raises(ValueError, match=f"has no parameter {next(iter(params))}"):
            make_sampler(method, pool, seed, **params)
        return
    with pytest.raises(ValueError, match=message):
        make_sampler(method, pool, seed, **params)


def test_make_sampler_refuses_an_unknown_method_naming_the_methods():
    with pytest.raises(ValueError, match="unknown sampling method 'OASIS'; choose one of"):
        make_sampler("OASIS", small_pool(), 0)


@pytest.mark.parametrize("budget", [-1, 2.5, "10", None], ids=repr)
def test_sample_labels_and_continue_sampling_refuse_bad_budgets(labelled, budget):
    pool, run = labelled
    with pytest.raises(ValueError, match="budget must be a whole number >= 0"):
        sample_labels(pool, make_sampler("oasis", pool, 0), LabelOracle(pool.labels), budget)
    with pytest.raises(ValueError, match="new_labels must be a whole number >= 0"):
        continue_sampling(pool, run, LabelOracle(pool.labels), budget, seed=0)


# --- label logs: hand edits, empty files and incomplete headers are named ---------------------


def _log(tmp_path, labels=6):
    pool = small_pool()
    path = tmp_path / "l.jsonl"
    with LabellingSession(pool, path, "oasis", seed=0) as session:
        session.run(LabelOracle(pool.labels), labels)
    return pool, path


def test_a_hand_edited_label_is_named_with_its_line(tmp_path):
    import json

    pool, path = _log(tmp_path)
    lines = path.read_text().splitlines()
    event = json.loads(lines[3])
    event["label"] = 1 - event["label"]  # a valid line, another answer than the one given
    lines[3] = json.dumps(event)
    path.write_text("\n".join(lines) + "\n")
    message = r"line 4: the line does not match its checksum: it was edited"
    with pytest.raises(SessionError, match=message):
        read_log(path)
    with pytest.raises(SessionError, match=message):
        LabellingSession(pool, path, readonly=True)
    del event["check"]
    lines[3] = json.dumps(event)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SessionError, match="line 4: the line has no checksum"):
        LabellingSession(pool, path)


def test_a_hand_edited_header_is_named(tmp_path):
    pool, path = _log(tmp_path)
    lines = path.read_text().splitlines()
    lines[0] = lines[0].replace('"seed": 0', '"seed": 1')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SessionError, match="line 1: the line does not match its checksum"):
        LabellingSession(pool, path, readonly=True)


@pytest.mark.parametrize("key", ["pool_fingerprint", "n_pairs", "method", "params"])
def test_a_header_without_a_field_names_the_field(tmp_path, key):
    import json

    pool, path = _log(tmp_path)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    del header[key]
    lines[0] = json.dumps(header)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SessionError, match=f"line 1: the header has no '{key}' field"):
        LabellingSession(pool, path)
    with pytest.raises(SessionError, match=f"line 1: the header has no '{key}' field"):
        read_log(path)


def test_an_empty_log_opened_read_only_is_named_empty(tmp_path, capsys):
    pool = small_pool()
    path = tmp_path / "empty.jsonl"
    path.touch()
    with pytest.raises(SessionError, match=r"the label log is empty \(0 bytes\)"):
        LabellingSession(pool, path, readonly=True)
    with pytest.raises(SessionError, match="the log is empty"):
        read_log(path)
    pool_file = _pool_file(tmp_path)
    assert main(["pairs", "estimate", str(pool_file), "--labels", str(path)]) == 1
    err = capsys.readouterr().err
    assert "the label log is empty (0 bytes)" in err and "no such" not in err
    with LabellingSession(pool, path, "passive", seed=0) as session:  # writable: created
        assert session.header["method"] == "passive"


@pytest.mark.parametrize(
    ("left", "right"),
    [([7, "7", 8], [9, 10, 11]), ([7, 8, 9], ["7", 10, 11])],
    ids=["within a column", "within the other column"],
)
def test_pair_ids_7_and_string_7_are_refused_as_mixed_types(left, right):
    frame = pd.DataFrame(
        {"id_left": left, "id_right": right, "score": [0.1, 0.2, 0.3], "predicted": [0, 1, 0]}
    )
    with pytest.raises(PoolError, match="mix types .*int.*str|mix integer and string ids"):
        PairPool.from_frame(frame)
