"""A reviewed sample as files: its benchmark (a membership file) and its design beside it.

A membership file of reviewed true clusters says which records belong together but not
how the clusters were sampled: with what probabilities, how many draws each unit had,
from how many units, within which strata. Estimates depend on all of it, so an exported
benchmark carries a second file, ``NAME.sample.json`` next to ``NAME.csv`` (or
``.parquet``), holding every field of the :class:`~er_evaluation.sampling.Sample`
except the reference itself, and a digest of the reference it belongs to.
:func:`read_sample` rebuilds the very same sample from the two, so the estimates from
the exported files equal those of the sample that was exported.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from er_evaluation.errors import examples, plain_id
from er_evaluation.io import write_json_atomic, write_membership
from er_evaluation.recommend import DesignSample, DrawnDesign
from er_evaluation.sampling import Sample
from er_evaluation.strata import Strata

FORMAT = "er_evaluation.sample/1"
RECOMMENDED = "er_evaluation.recommended/1"
"""The design file of a recommended design (:class:`~er_evaluation.recommend.DrawnDesign`):
its draw and the frame facts its estimates need, written before the review (``er-eval plan
--write-sample``: no reference yet) or with the reviewed benchmark (a project's export)."""
SUFFIX = ".sample.json"
_STRATA_ARRAYS = ("frame_size", "n_draws", "row_unit", "row_stratum", "row_count")
_STRATA_OPTIONAL = ("row_factor", "unit_records", "unit_pairs")


def design_path(path: str | os.PathLike) -> Path:
    """``benchmark.sample.json`` for ``benchmark.csv`` (or ``.csv.gz``, ``.parquet``)."""
    path = Path(path)
    return path.with_name(path.name.split(".", 1)[0] + SUFFIX)


def write_sample(
    sample: Sample, path: str | os.PathLike, *, description: dict | None = None
) -> tuple[Path, Path]:
    """Write ``sample.reference`` to ``path`` (``record_id, cluster_id``; CSV or Parquet by
    suffix) and the rest of the sample to :func:`design_path` (JSON), each atomically.
    ``description``: free-form facts kept with the design (where it came from)."""
    written = write_membership(sample.reference, path)
    design = {
        "format": FORMAT,
        "description": description or {},
        "reference": _digest(sample.reference),
        "units": _ids(sample.units),
        "multiplicity": [int(m) for m in sample.multiplicity],
        "probability": [float(p) for p in sample.probability],
        "design": sample.design,
        "weights": sample.weights,
        "replace": bool(sample.replace),
        "population_size": None if sample.population_size is None else int(sample.population_size),
        "sample_of": sample.sample_of,
        "blocks": None
        if sample.blocks is None
        else {"records": _ids(sample.blocks.index), "blocks": _ids(sample.blocks)},
        "strata": None if sample.strata is None else _strata_dict(sample.strata),
    }
    target = design_path(written)
    write_json_atomic(design, target, indent=1)
    return written, target


def write_drawn(
    drawn: DrawnDesign,
    path: str | os.PathLike,
    *,
    reference: pd.Series | None = None,
    description: dict | None = None,
) -> tuple[Path | None, Path]:
    """Write a recommended design's draw to :func:`design_path` of ``path`` (JSON) and, when
    ``reference`` is given (the reviewed true clusters), the reference to ``path``
    (``record_id, cluster_id``), each atomically. Without a reference (a design written
    before its review) the design file accepts any reference that gives the true cluster
    of every record it needs. Returns both paths (None for the reference not written)."""
    written = None if reference is None else write_membership(reference, path)
    design = drawn_design(drawn, reference=reference, description=description)
    target = design_path(path if written is None else written)
    write_json_atomic(design, target, indent=1)
    return written, target


def drawn_design(
    drawn: DrawnDesign, *, reference: pd.Series | None = None, description: dict | None = None
) -> dict[str, Any]:
    """The content of a recommended design's file (:func:`write_drawn`), as JSON data."""
    return {
        "format": RECOMMENDED,
        "description": description or {},
        "reference": None if reference is None else _digest(reference),
        "n_records": int(drawn.n_records),
        "predicted_links": int(drawn.predicted_links),
        "strata": {
            "names": _ids(drawn.frame_sizes.index),
            "frame_size": [int(v) for v in drawn.frame_sizes],
            "records": [float(v) for v in drawn.unit_totals["records"]],
            "pairs": [float(v) for v in drawn.unit_totals["pairs"]],
        },
        "clusters": {"ids": _ids(drawn.clusters.index), "strata": _ids(drawn.clusters)},
        "members": {"records": _ids(drawn.members.index), "clusters": _ids(drawn.members)},
        "records": _ids(drawn.records),
        "benchmark": None if drawn.benchmark is None else _ids(drawn.benchmark),
    }


def read_sample(path: str | os.PathLike, reference: pd.Series) -> Sample | DesignSample | None:
    """The sample exported to ``path`` (see :func:`write_sample`), rebuilt around
    ``reference`` (the membership file as read), or None when ``path`` has no design
    file beside it. Ids stored as text (a CSV file) are matched as text. A design file
    that does not belong to ``reference`` (another export's, or the file was edited) is
    a ValueError naming both files."""
    target = design_path(path)
    if not target.exists():
        return None
    try:
        design = json.loads(target.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{target}: cannot read the sample design: {err}") from err
    if not isinstance(design, dict) or design.get("format") not in (FORMAT, RECOMMENDED):
        raise ValueError(f"{target}: not a sample design file ({FORMAT} or {RECOMMENDED})")
    as_text = len(reference) > 0 and all(isinstance(i, str) for i in reference.index[:1000])
    ids = (lambda values: [str(v) for v in values]) if as_text else (lambda values: list(values))
    if design.get("format") == RECOMMENDED:
        return _read_drawn(design, reference, ids, Path(path).name, target.name)
    expected, found = design["reference"], _digest(reference)
    if found != expected:
        raise ValueError(
            f"{Path(path).name} does not hold the reviewed clusters {target.name} describes "
            f"({expected['records']:,} records in {expected['clusters']:,} clusters expected, "
            f"{found['records']:,} in {found['clusters']:,} found, or other ids): export both "
            "again"
        )
    blocks = None
    if design["blocks"] is not None:
        blocks = pd.Series(
            design["blocks"]["blocks"], index=pd.Index(ids(design["blocks"]["records"]))
        ).reindex(reference.index)
    strata = None if design["strata"] is None else _strata_from(design["strata"])
    return Sample(
        reference=reference,
        units=pd.Index(ids(design["units"])).infer_objects(),
        multiplicity=np.asarray(design["multiplicity"], dtype=np.int64),
        probability=np.asarray(design["probability"], dtype=float),
        design=design["design"],
        weights=design["weights"],
        replace=design["replace"],
        population_size=design["population_size"],
        blocks=blocks,
        sample_of=design["sample_of"],
        strata=strata,
    )


def _read_drawn(design: dict, reference: pd.Series, ids, name: str, design_name: str):
    """The reviewed samples of a recommended design file around ``reference``, refused
    (ValueError naming both files) when the reference is not the one it was exported with
    or does not give exactly the true clusters of the design's records."""
    expected = design["reference"]
    if expected is not None and _digest(reference) != expected:
        raise ValueError(
            f"{name} does not hold the reviewed clusters {design_name} describes "
            f"({expected['records']:,} records in {expected['clusters']:,} clusters expected): "
            "export both again"
        )
    strata = design["strata"]
    names = pd.Index(strata["names"], dtype=object)
    benchmark = design["benchmark"]
    drawn = DrawnDesign(
        clusters=pd.Series(
            design["clusters"]["strata"], index=pd.Index(design["clusters"]["ids"]), dtype=object
        ),
        members=pd.Series(
            design["members"]["clusters"], index=pd.Index(ids(design["members"]["records"]))
        ),
        frame_sizes=pd.Series(strata["frame_size"], index=names, dtype=np.int64),
        unit_totals=pd.DataFrame(
            {"records": strata["records"], "pairs": strata["pairs"]}, index=names
        ),
        records=pd.Index(ids(design["records"])),
        n_records=design["n_records"],
        predicted_links=design["predicted_links"],
        benchmark=None if benchmark is None else pd.Index(ids(benchmark)),
    )
    needed = drawn.needed
    missing = needed.difference(reference.index)
    if len(missing):
        raise ValueError(
            f"{name} does not give the true cluster of {len(missing):,} record(s) that "
            f"{design_name} drew for review: {examples(missing)}; fill them in (or use the "
            "reference this design belongs to)"
        )
    reached = reference.isin(pd.unique(reference.reindex(needed).to_numpy()))
    if not reached.all():
        extra = reference.index[~reached.to_numpy()]
        raise ValueError(
            f"{len(extra):,} record(s) of {name} are in no true cluster of the records "
            f"{design_name} drew for review: {examples(extra)}; is it the reference of "
            "another sample?"
        )
    try:
        return drawn.reviewed(reference)
    except ValueError as err:
        raise ValueError(f"{name} with {design_name}: {err}") from err


def describe(path: str | os.PathLike) -> str | None:
    """One line saying how the sample behind ``path`` was drawn, or None without a design
    file."""
    target = design_path(path)
    if not target.exists():
        return None
    design = json.loads(target.read_text())
    if design.get("format") == RECOMMENDED:
        recall = (
            f"recall from a benchmark of {len(design['benchmark']):,} records"
            if design["benchmark"] is not None
            else f"{len(design['records']):,} record draws for recall"
        )
        return (
            f"recommended design from {target.name}: {len(design['clusters']['ids']):,} "
            f"predicted clusters reviewed whole in {len(design['strata']['names'])} strata, "
            f"{recall}"
        )
    strata = design.get("strata")
    parts = [
        f"design {design['design']!r} from {target.name}",
        f"{sum(design['multiplicity']):,} draws of {len(design['units']):,} units",
        "without replacement" if not design["replace"] else "with replacement",
    ]
    if design.get("population_size"):
        parts.append(f"from {design['population_size']:,}")
    if strata:
        parts.append(f"in {len(strata['names'])} strata")
    return ", ".join(parts)


def _ids(values) -> list:
    return [plain_id(v) for v in values]


def _digest(reference: pd.Series) -> dict[str, Any]:
    """Counts and a hash of the (record, cluster) pairs with the ids as text, so a CSV
    copy (ids read back as text) and a Parquet copy of one reference agree."""
    pairs = sorted(zip(map(str, reference.index), map(str, reference.to_numpy()), strict=True))
    digest = hashlib.sha256(json.dumps(pairs).encode()).hexdigest()
    return {"records": len(reference), "clusters": int(reference.nunique()), "sha256": digest}


def _strata_dict(strata: Strata) -> dict[str, Any]:
    out: dict[str, Any] = {
        "names": _ids(strata.names),
        "replace": bool(strata.replace),
        "frame": strata.frame,
        "ratio": strata.ratio,
    }
    for name in _STRATA_ARRAYS:
        out[name] = [int(v) for v in getattr(strata, name)]
    for name in _STRATA_OPTIONAL:
        values = getattr(strata, name)
        out[name] = None if values is None else [float(v) for v in values]
    return out


def _strata_from(stored: dict[str, Any]) -> Strata:
    optional = {
        name: None if stored[name] is None else np.asarray(stored[name], dtype=float)
        for name in _STRATA_OPTIONAL
    }
    return Strata(
        names=pd.Index(stored["names"]),
        replace=stored["replace"],
        frame=stored["frame"],
        ratio=stored["ratio"],
        **{name: np.asarray(stored[name], dtype=np.int64) for name in _STRATA_ARRAYS},
        **optional,
    )
