"""Bad inputs to the pair samplers, runs, sessions and estimates get clear errors
(issue 10, item 8): one case per input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from er_evaluation.cli import main
from er_evaluation.pairs import (
    LabellingSession,
    LabelOracle,
    PairPool,
    estimate_from_labels,
    history,
    make_sampler,
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
    """Issue 10: a prediction of 2 gave recall 2.0."""
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


@pytest.mark.parametrize("alpha", [-0.5, 1.5, float("nan")], ids=repr)
def test_sampler_alpha_outside_unit_interval_is_an_error(alpha):
    with pytest.raises(ValueError, match="alpha must be"):
        make_sampler("oasis", small_pool(), 0, alpha=alpha)


@pytest.mark.parametrize("budget", [-1, 2.5, True], ids=repr)
def test_bad_budget_is_an_error(budget, tmp_path):
    pool = small_pool()
    with pytest.raises(ValueError, match="budget must be a whole number >= 0"):
        sample_labels(pool, make_sampler("passive", pool, 0), LabelOracle(pool.labels), budget)
    with LabellingSession(pool, tmp_path / "l.jsonl", "passive", seed=0) as session:
        with pytest.raises(ValueError, match="budget must be a whole number >= 0"):
            session.run(LabelOracle(pool.labels), budget)


@pytest.mark.parametrize("level", [0.0, 1.0, 95, -0.5, float("nan")], ids=repr)
def test_level_outside_open_unit_interval_is_an_error(labelled, level):
    pool, run = labelled
    with pytest.raises(ValueError, match="level must be"):
        estimate_from_labels(run, pool.predicted, level=level)
    with pytest.raises(ValueError, match="level must be"):
        history(run, pool.predicted, level=level)


@pytest.mark.parametrize("alpha", [2.0, 0.0, 1.0, float("nan")], ids=repr)
def test_estimate_alpha_outside_unit_interval_is_an_error(labelled, alpha):
    pool, run = labelled
    with pytest.raises(ValueError, match="alpha must be strictly between 0 and 1"):
        estimate_from_labels(run, pool.predicted, alpha=alpha)


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
