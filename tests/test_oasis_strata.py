"""OASIS strata from Freedman-Diaconis CSF bins (Marchant & Rubinstein 2017, Algorithm 1, with
the bin width of their `oasis` 0.1.3 package)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import rewrite_as_old_log

from er_evaluation.datasets import load_pool
from er_evaluation.pairs import LabellingSession, LabelOracle, OASISSampler, stratify
from er_evaluation.pairs._stratify import csf_edges
from er_evaluation.pairs.samplers import DEFAULT_MAX_SHARE


def test_fd_edges_hand_computed():
    # quartiles 0 and 1.25 -> width 2 * 1.25 * 8^(-1/3) = 1.25; occupied bins 0 (six
    # scores), 1 (the 2) and 6 (the 8): cumulative sqrt counts 2.449, 3.449, 4.449; three
    # strata cut at 1.483 and 2.966, i.e. after bins 0 and 1 (right edges 1.25 and 2.5)
    scores = np.array([0.0, 0, 0, 0, 1, 1, 2, 8])
    np.testing.assert_allclose(csf_edges(scores, 3, "fd"), [1.25, 2.5])
    strata = stratify(scores, np.zeros(8, dtype=np.int8), 3, n_bins="fd")
    np.testing.assert_array_equal(strata.sizes, [6, 1, 1])


def test_fd_edges_with_tied_quartiles_use_distinct_scores():
    # the middle half of the scores tied: IQR 0, each distinct score is a bin (counts 10,
    # 1, 1, 1: cumulative 3.162, 4.162, 5.162, 6.162, cuts at 2.054 and 4.108 -> after the
    # first and the second distinct score, at the next distinct scores 0.3 and 0.5)
    scores = np.array([0.0] * 10 + [0.3, 0.5, 0.9])
    np.testing.assert_allclose(csf_edges(scores, 3, "fd"), [0.3, 0.5])
    strata = stratify(scores, np.zeros(13, dtype=np.int8), 3, n_bins="fd")
    np.testing.assert_array_equal(strata.sizes, [10, 1, 2])


@pytest.mark.parametrize("seed", range(4))
def test_fd_edges_equal_a_full_histogram(seed):
    """Counting only occupied bins gives the cuts of the full Freedman-Diaconis histogram."""
    rng = np.random.default_rng(seed)
    scores = np.concatenate([rng.beta(0.2, 30.0, 3000), rng.beta(5.0, 1.0, 40)])
    q25, q75 = np.percentile(scores, [25, 75])
    width = 2 * (q75 - q25) * len(scores) ** (-1 / 3)
    lo = scores.min()
    n_bins = math.floor((scores.max() - lo) / width) + 1
    counts, edges = np.histogram(scores, bins=n_bins, range=(lo, lo + n_bins * width))
    csf = np.cumsum(np.sqrt(counts))
    cuts = []
    for target in csf[-1] / 10 * np.arange(1, 10):
        first = int(np.argmax(csf >= target))
        cuts.append(edges[min(first, n_bins - 2) + 1])
    np.testing.assert_allclose(csf_edges(scores, 10, "fd"), np.unique(cuts), rtol=1e-12)


def test_bad_n_bins_is_refused():
    with pytest.raises(ValueError, match="n_bins"):
        csf_edges(np.array([0.1, 0.5, 0.9]), 3, "auto")


def test_fd_strata_resolve_the_mass_of_low_scores_on_abt_buy():
    pool = load_pool("abt-buy")
    coarse = stratify(pool.scores, pool.predicted, 30)
    fine = stratify(pool.scores, pool.predicted, 30, n_bins="fd")
    # 40 K equal bins leave 98% of the pool in one stratum; FD bins cut that mass up
    assert coarse.sizes.max() > 0.95 * pool.n_pairs
    assert fine.sizes.max() < 0.2 * pool.n_pairs
    assert fine.n_strata >= 25
    sampler = OASISSampler(pool, 0, n_bins="fd", max_share=None)
    np.testing.assert_array_equal(sampler.strata.sizes, fine.sizes)
    # with the default cap the FD strata are cut further where they exceed it
    cut = OASISSampler(pool, 0, n_bins="fd").strata
    expected = stratify(pool.scores, pool.predicted, 30, n_bins="fd", max_share=DEFAULT_MAX_SHARE)
    np.testing.assert_array_equal(cut.codes, expected.codes)
    assert sampler.params()["n_bins"] == "fd"


def test_oasis_log_from_before_fd_strata_still_replays(tmp_path):
    pool = load_pool("abt-buy")
    path = tmp_path / "log.jsonl"
    with LabellingSession(pool, path, "oasis", seed=5, n_bins=None, decay=False) as session:
        session.run(LabelOracle(pool.labels), 40)
        expected = session.label_run().index.tolist()
    # headers written before FD strata lack it
    rewrite_as_old_log(path, lambda header: header["params"].pop("n_bins"))
    with LabellingSession(pool, path, readonly=True) as resumed:
        assert resumed.sampler.n_bins is None
        assert resumed.label_run().index.tolist() == expected
