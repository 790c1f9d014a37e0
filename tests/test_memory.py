"""The in-memory path leaves the caller's objects as they were and keeps the estimator's
memory proportional to the sample (plus one pass over the population).

Measured with tracemalloc, which sees numpy arrays and pandas hash tables (not Arrow's
own buffers: benchmarks/bench_kernel.py reports the resident-set peak beside it).
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from er_evaluation import _contingency, _record_ids
from er_evaluation._contingency import contingency
from er_evaluation.estimators import estimate
from er_evaluation.metrics import evaluate
from er_evaluation.sampling import sample_clusters

#: pandas' own O(1) attributes, cached on any index by ordinary use (printing it, say);
#: everything else (hash tables, NaN masks, uniqueness flags) must stay off the caller's index
SCALAR_CACHES = {"dtype", "inferred_type", "array", "_constructor"}


def clustering(n: int, ids: str, seed: int = 0) -> pd.Series:
    rng = np.random.default_rng(seed)
    records = rng.permutation(n)
    if ids == "range":  # pandas' default index: 0..n-1, never an array unless asked
        index = pd.RangeIndex(n)
    else:
        index = pd.Index(records) if ids == "int" else pd.Index([f"r{r}" for r in records])
    return pd.Series(rng.integers(0, max(n // 5, 1), n), index=index)


def _timing():
    """benchmarks/_timing.py, whose memory probe bench_kernel.py also uses (the benchmarks
    folder is not a package: loaded from its path)."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "_timing.py"
    spec = importlib.util.spec_from_file_location("benchmarks_timing", path)
    module = sys.modules.setdefault(spec.name, importlib.util.module_from_spec(spec))
    spec.loader.exec_module(module)  # registered first: its dataclasses look themselves up
    return module


traced = _timing().traced


@pytest.mark.slow
@pytest.mark.parametrize("ids", ["int", "str", "range"])
@pytest.mark.parametrize("case", ["same order", "shuffled", "estimate"])
def test_caller_objects_keep_no_new_cache(ids, case):
    prediction = clustering(20_000, ids)
    reference = prediction.map(lambda c: c // 2)
    if ids == "range":  # an equal range of its own (sampling it may cache its array)
        reference.index = pd.RangeIndex(len(reference))
    if case == "shuffled":
        reference = reference.sample(frac=1, random_state=1)
    sample = sample_clusters(reference, 40, seed=2) if case == "estimate" else None
    inputs = [prediction, reference] if sample is None else [prediction, sample.reference]
    warm = (lambda: estimate(prediction, sample)) if sample else (lambda: evaluate(*inputs))
    copies = [series.copy(deep=True) for series in inputs]
    before = [set(series.index._cache) for series in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm()  # imports and pandas' first-use caches
        probe = traced(warm)
    assert probe.held < 64 * 1024  # nothing population-sized is kept anywhere
    for series, keys, copy in zip(inputs, before, copies, strict=True):
        added = set(series.index._cache) - keys
        assert added <= SCALAR_CACHES, added  # for a RangeIndex: no `_data` array
        if "array" in added and ids == "int":  # pandas' wrapper of the index's own array
            assert np.shares_memory(series.index._cache["array"].to_numpy(), series.index)
        pd.testing.assert_series_equal(series, copy)


def _prediction_scope_peak(n: int, ids: str) -> int:
    prediction = clustering(n, ids)
    sample = prediction.iloc[:300].map(lambda c: c % 7)
    return traced(lambda: contingency(prediction, sample, scope="prediction")).peak


@pytest.mark.slow
@pytest.mark.parametrize("ids, bytes_per_record", [("int", 4), ("str", 10), ("range", 4)])
def test_estimator_memory_follows_the_sample(monkeypatch, ids, bytes_per_record):
    # small chunks so that a pass's chunk-sized transients do not hide the growth;
    # the same 300-record sample inside populations of 100k and 400k records: the peak
    # grows by at most `bytes_per_record` per added record (the population's byte marks
    # or 64-bit keys and its cluster counts), where the previous kernel's id alignment
    # allocated 24 (integer ids) and 12 (string ids) bytes per record; a RangeIndex made
    # into an array would cost 8
    monkeypatch.setattr(_record_ids, "_CHUNK", 1 << 12)
    monkeypatch.setattr(_contingency, "_CHUNK", 1 << 12)
    small, large = _prediction_scope_peak(100_000, ids), _prediction_scope_peak(400_000, ids)
    assert (large - small) / 300_000 < bytes_per_record


def test_sampling_a_range_indexed_reference_leaves_its_index_alone():
    reference = clustering(20_000, "range")
    before = set(reference.index._cache)
    sample = sample_clusters(reference, 40, seed=2)
    assert set(reference.index._cache) - before <= SCALAR_CACHES - {"array"}
    assert len(sample.reference) > 0
