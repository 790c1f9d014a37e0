"""The one variance routine of the pair-label importance estimates (issue 10, item 6;
issue 11, item 4): hand-computed cases and its labels-only special case."""

from __future__ import annotations

import numpy as np
import pytest

from er_evaluation.pairs._variance import (
    conditional_variance,
    labelled_groups,
    labels_only_variance,
)


def test_conditional_variance_hand_computed():
    # two cells: S = 4 and 0.5; match rates 0.25 and 0.9; influences (g1, g0) = (2, -1), (1, 3)
    var = conditional_variance([4.0, 0.5], [0.25, 0.9], [2.0, 1.0], [-1.0, 3.0])
    expected = 4 * (0.25 * 4 + 0.75 * 1) + 0.5 * (0.9 * 1 + 0.1 * 9)
    assert var == pytest.approx(expected, rel=1e-15)


def test_conditional_variance_of_several_components_and_undrawn_cells():
    # a cell without draws (S = 0) contributes nothing, even with an undefined influence
    g1 = np.array([[1.0, 2.0], [np.nan, np.nan], [0.5, -1.0]])
    g0 = np.array([[0.0, 1.0], [np.inf, 0.0], [2.0, 0.0]])
    var = conditional_variance([2.0, 0.0, 1.0], [0.5, 0.3, 0.1], g1, g0)
    expected = [
        2 * (0.5 * 1 + 0.5 * 0) + 1 * (0.1 * 0.25 + 0.9 * 4),
        2 * (0.5 * 4 + 0.5 * 1) + 1 * (0.1 * 1 + 0.9 * 0),
    ]
    np.testing.assert_allclose(var, expected, rtol=1e-15)


def test_labels_only_variance_is_the_sum_of_the_draws_squared_influences():
    rng = np.random.default_rng(0)
    cell = rng.integers(0, 4, 50)
    label = rng.integers(0, 2, 50)
    weight = rng.exponential(size=50)
    g = rng.normal(size=(4, 2))  # influence per unit weight of (cell, label)
    psi = weight * g[cell, label]
    s = labelled_groups(cell, label, weight**2, 4)
    assert labels_only_variance(s, g[:, 1], g[:, 0]) == pytest.approx(np.sum(psi**2), rel=1e-12)
