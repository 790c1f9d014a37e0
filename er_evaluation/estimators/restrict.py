"""The two conventions for a prediction that lacks some reviewed records.

PatentsView versions cover different sets of mentions, while the Binette et al. (2023)
benchmark was drawn once, from the mentions of one population. For a version lacking
some reviewed records there are two ways to estimate its metrics:

- ``on_missing="restrict"`` (this package's default convention when records are
  missing): drop the missing records but keep each sampled unit's selection probability
  as drawn (from its full size). The estimators then target the version's metrics on
  its own records, with the design the sample really had; every estimator (record and
  cluster recall alike) uses those probabilities.
- ``on_missing="restrict_sample"`` (the convention of the ``er-evaluation`` package of
  Binette et al., which produced the published PatentsView figures): first restrict the
  benchmark to the version's records, as if it had been drawn from that version: units
  left without a record are dropped and size-proportional probabilities are recomputed
  from the restricted sizes. :func:`restrict_sample` builds that sample.

Both coincide when no reviewed record is missing.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from er_evaluation.sampling import Sample

__all__ = ["restrict_sample"]


def restrict_sample(sample: Sample, prediction: pd.Series) -> Sample:
    """``sample`` restricted to the records of ``prediction`` (er-evaluation's convention,
    see the module docstring): reviewed records absent from ``prediction`` are dropped,
    units left without a record are dropped (with their multiplicities), and for
    size-proportional samples (``weights="cluster_size"``) each unit's probability becomes
    its restricted size; uniform and custom probabilities are kept."""
    ref = sample.reference
    keep = prediction.index.get_indexer(ref.index) >= 0
    if keep.all():
        return sample
    ref = ref[keep]
    if len(ref) == 0:
        raise ValueError("no reviewed record of the sample is in the prediction")
    blocks = None if sample.blocks is None else sample.blocks.reindex(ref.index)
    unit_of = ref if blocks is None else blocks
    sizes = unit_of.value_counts(sort=False)
    pos = sample.units.get_indexer(sizes.index)
    order = np.sort(pos)
    units = sample.units[order]
    probability = np.asarray(sample.probability, dtype=float)[order]
    if sample.weights == "cluster_size":
        probability = sizes.reindex(units).to_numpy(dtype=float)
    return replace(
        sample,
        reference=ref,
        units=units,
        multiplicity=np.asarray(sample.multiplicity)[order],
        probability=probability,
        blocks=blocks,
    )
