"""One validation path for every metric: turn (prediction, reference) into a contingency.

Like scikit-learn's ``_check_clusterings``: every public metric calls
:func:`check_contingency` first, so argument errors, coverage errors and the
``on_missing`` policy are the same everywhere, and a precomputed
:class:`~er_evaluation.Contingency` can be passed instead of two
clusterings (that is how :func:`~er_evaluation.metrics.evaluate` shares one
table across many metrics).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numpy as np
import pandas as pd

from er_evaluation import _contingency
from er_evaluation._contingency_table import Contingency
from er_evaluation._coverage import OnMissing
from er_evaluation.errors import warn_undefined

__all__ = ["check_contingency", "on_records", "cached", "OnMissing"]

T = TypeVar("T")


def check_contingency(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None = None,
    *,
    on_missing: OnMissing = "error",
) -> Contingency:
    """Validate the arguments of a metric and return the shared-scope contingency.

    ``prediction`` is either a membership vector (then ``reference`` is required)
    or a precomputed ``Contingency`` with ``scope="shared"`` (then ``reference``
    must be None). Two empty clusterings give an empty table, on which every
    metric returns NaN with :class:`UndefinedMetricWarning`; any other invalid
    input raises the data model's errors (naming the offending ids).
    """
    if isinstance(prediction, Contingency):
        if reference is not None:
            raise TypeError(
                "pass either a precomputed Contingency alone or two clusterings "
                "(prediction, reference), not a Contingency and a reference"
            )
        if prediction.scope != "shared":
            raise ValueError(
                f"exact metrics need a contingency with scope='shared', got scope="
                f"{prediction.scope!r}; a 'prediction'-scope table (a reference sampled inside "
                "the prediction's population) is for the estimators"
            )
        return prediction
    if reference is None:
        raise TypeError(
            "reference is missing: pass a reference clustering (a Series record id -> "
            "cluster id) or a precomputed Contingency as the only argument"
        )
    if _is_empty_series(prediction) and _is_empty_series(reference):
        return _empty_contingency(prediction, reference)
    # through the module, so that a test patching the kernel sees every call
    return _contingency.contingency(prediction, reference, scope="shared", on_missing=on_missing)


def on_records(
    prediction: pd.Series | Contingency,
    reference: pd.Series | None,
    on_missing: OnMissing,
    metric: str,
    compute: Callable[[Contingency], T],
) -> T | float:
    """``compute`` of the validated contingency (:func:`check_contingency`), or NaN with
    :class:`UndefinedMetricWarning` naming ``metric`` when there are no records: the one
    empty-input rule of the metrics that are defined on any non-empty input."""
    ct = check_contingency(prediction, reference, on_missing=on_missing)
    if ct.n_shared == 0:
        # stack: warn_undefined, on_records, the public metric, its caller
        return warn_undefined(metric, "there are no records")
    return compute(ct)


def cached(ct: Contingency, key: str, compute: Callable[[Contingency], T]) -> T:
    """``compute(ct)``, remembered on ``ct`` (as its own ``cached_property`` values are).

    Several metrics share one intermediate (the mutual information, B-cubed
    precision and recall); a metric table on one contingency computes each once.
    """
    store = ct.__dict__.setdefault("_metric_cache", {})
    if key not in store:
        store[key] = compute(ct)
    return store[key]  # type: ignore[return-value]


def _is_empty_series(value: object) -> bool:
    return isinstance(value, pd.Series) and len(value) == 0


def _empty_contingency(prediction: pd.Series, reference: pd.Series) -> Contingency:
    empty = np.zeros(0, dtype=np.int64)
    return Contingency(
        pred=empty,
        ref=empty,
        count=empty,
        pred_size=empty,
        ref_size=empty,
        pred_labels=pd.Index(prediction.to_numpy()),
        ref_labels=pd.Index(reference.to_numpy()),
        scope="shared",
        n_records=0,
        n_shared=0,
    )
