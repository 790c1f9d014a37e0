"""Sampling designs: what they draw, the probabilities and multiplicities they carry,
reproducibility and errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from er_evaluation.errors import ClusteringError
from er_evaluation.sampling import (
    Sample,
    benchmark_sample,
    sample_blocks,
    sample_clusters,
    sample_records,
    selection_probability,
)

TRUTH = pd.Series([1, 1, 1, 2, 2, 3, 3, 4], index=range(1, 9))


def test_sample_records_keeps_multiplicities_and_size_probabilities():
    s = sample_records(TRUTH, 50, seed=0)
    assert s.design == "records" and s.weights == "cluster_size" and s.replace
    assert s.n_draws == 50 and s.population_size == 8
    sizes = TRUTH.value_counts()
    assert list(s.probability) == [sizes[u] for u in s.units]
    # the reference holds every record of every sampled cluster
    assert set(s.reference.index) == set(TRUTH.index[TRUTH.isin(s.units)])
    # multiplicities are the numbers of sampled records per cluster (not deduplicated)
    rows = np.random.default_rng(0).choice(8, size=50, replace=True)
    expected = pd.Series(TRUTH.to_numpy()[rows]).value_counts()
    assert dict(zip(s.units, s.multiplicity, strict=True)) == expected.to_dict()


def test_sample_records_without_replacement_census():
    s = sample_records(TRUTH, 8, replace=False, seed=1)
    assert dict(zip(s.units, s.multiplicity, strict=True)) == {1: 3, 2: 2, 3: 2, 4: 1}
    with pytest.raises(ValueError, match="without replacement from 8"):
        sample_records(TRUTH, 9, replace=False)


def test_sample_clusters_reproducible_and_weighted():
    a = sample_clusters(TRUTH, 3, weights="cluster_size", seed=42)
    b = sample_clusters(TRUTH, 3, weights="cluster_size", seed=42)
    assert a.units.equals(b.units) and (a.multiplicity == b.multiplicity).all()
    assert a.weights == "cluster_size" and a.population_size == 4
    # size-proportional draws: over many draws cluster 1 (size 3) is drawn ~3x cluster 4
    big = sample_clusters(TRUTH, 8000, weights="cluster_size", seed=1)
    counts = dict(zip(big.units, big.multiplicity, strict=True))
    assert counts[1] / counts[4] == pytest.approx(3.0, rel=0.1)


def test_explicit_weights_are_probabilities_not_inverse_weights():
    w = pd.Series({1: 1.0, 2: 1.0, 3: 1.0, 4: 9.0})
    s = sample_clusters(TRUTH, 6000, weights=w, seed=0)
    counts = dict(zip(s.units, s.multiplicity, strict=True))
    assert counts[4] > 4 * counts[1]
    assert s.weights == "custom"
    assert dict(zip(s.units, s.probability, strict=True))[4] == 9.0


def test_weights_must_be_positive_and_complete():
    with pytest.raises(ValueError, match="> 0.*e.g. 3"):
        sample_clusters(TRUTH, 2, weights=pd.Series({1: 1.0, 2: 1.0, 3: 0.0, 4: 1.0}))
    with pytest.raises(ValueError, match="missing for 1 unit"):
        sample_clusters(TRUTH, 2, weights=pd.Series({1: 1.0, 2: 1.0, 3: 1.0}))
    with pytest.raises(ValueError, match="weights must be"):
        selection_probability(TRUTH.value_counts(), "inverse")


def test_unequal_probabilities_without_replacement_rejected():
    with pytest.raises(ValueError, match="unequal-probability sampling without replacement"):
        sample_clusters(TRUTH, 2, weights="cluster_size", replace=False)
    with pytest.raises(ValueError, match="without replacement from 4"):
        sample_clusters(TRUTH, 5, replace=False)
    with pytest.raises(ValueError, match="n must be a whole number >= 1"):
        sample_clusters(TRUTH, 0)


def test_sample_blocks_whole_clusters_and_split_error():
    blocks = pd.Series(["x"] * 5 + ["y"] * 3, index=range(1, 9))
    s = sample_blocks(TRUTH, blocks, 2, replace=False, seed=0)
    assert s.design == "blocks" and s.population_size == 2
    assert set(s.blocks.unique()) == set(s.units)
    assert s.blocks.index.equals(s.reference.index)
    split = pd.Series(["x"] * 4 + ["y"] * 4, index=range(1, 9))  # cluster 2 = {4, 5} split
    with pytest.raises(ValueError, match="split across blocks: 2"):
        sample_blocks(TRUTH, split, 1)
    with pytest.raises(ValueError, match="have no block: 8"):
        sample_blocks(TRUTH, blocks.drop(8), 1)


def test_benchmark_sample_defaults_and_multiplicity():
    ref = TRUTH[TRUTH.isin([1, 3])]
    s = benchmark_sample(ref)
    assert s.weights == "cluster_size" and s.design == "benchmark"
    assert list(s.probability) == [3.0, 2.0] and list(s.multiplicity) == [1, 1]
    s2 = benchmark_sample(ref, multiplicity=pd.Series({1: 2, 3: 1}))
    assert s2.n_draws == 3 and s2.n_units == 2
    with pytest.raises(ValueError, match="multiplicity is missing"):
        benchmark_sample(ref, multiplicity=pd.Series({1: 2}))


def test_empty_and_invalid_samples():
    with pytest.raises((ValueError, ClusteringError)):
        benchmark_sample(pd.Series([], dtype="int64"))
    with pytest.raises(ValueError, match="empty sample"):
        Sample(
            reference=TRUTH.iloc[:0],
            units=pd.Index([]),
            multiplicity=np.array([], dtype=int),
            probability=np.array([]),
            design="clusters",
            weights="uniform",
            replace=True,
        )
    with pytest.raises(ValueError, match="draws without replacement"):
        Sample(
            reference=TRUTH[TRUTH.isin([1, 2])],
            units=pd.Index([1, 2]),
            multiplicity=np.array([2, 2]),
            probability=np.array([1.0, 1.0]),
            design="clusters",
            weights="uniform",
            replace=False,
            population_size=3,
        )


def test_reviewed_predicted_requires_labels_for_every_record():
    pred = pd.Series(["a", "b", "b", "a", "c", "d", "d", "d"], index=range(1, 9))
    s = sample_clusters(pred, 2, seed=0)
    assert s.reviewed_predicted(TRUTH).sample_of == "predicted"
    with pytest.raises(ValueError, match="no reviewed true cluster"):
        s.reviewed_predicted(TRUTH.iloc[:1])


def test_sample_units_must_match_reviewed_records():
    common = dict(
        multiplicity=np.array([1, 1]),
        probability=np.array([1.0, 1.0]),
        design="clusters",
        weights="uniform",
        replace=True,
    )
    with pytest.raises(ValueError, match="not sampled units: 3"):
        Sample(reference=TRUTH[TRUTH.isin([1, 3])], units=pd.Index([1, 2]), **common)
    with pytest.raises(ValueError, match="have no reviewed record: 2"):
        Sample(reference=TRUTH[TRUTH.isin([1])], units=pd.Index([1, 2]), **common)


@pytest.mark.parametrize("seed", [-1, 1.5, "a", True])
def test_sampling_seed_must_be_a_whole_number_or_a_generator(seed):
    truth = pd.Series([1, 1, 2, 3], index=list("abcd"))
    with pytest.raises(
        ValueError, match="seed must be None, a whole number >= 0 or a numpy Generator"
    ):
        sample_records(truth, 2, seed=seed)
    with pytest.raises(ValueError, match="seed must be"):
        sample_clusters(truth, 2, seed=seed)
