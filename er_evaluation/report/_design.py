"""The parts of a report that differ for the recommended design's two samples
(:class:`~er_evaluation.recommend.DesignSample`): which version the design was drawn
from, its estimates, and its description (take-all part, size bands, record draws for
recall, records read)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from er_evaluation.designs import TAKE_ALL
from er_evaluation.estimators import estimate_table, stratum_contributions
from er_evaluation.recommend import DesignSample

#: what the recommended design estimates (precision, recall and their F-measure)
DESIGN_METRICS = ("pairwise_precision", "pairwise_recall", "pairwise_f1")


def drawn_version(
    predictions: Mapping[str, pd.Series], sample: DesignSample, drawn_from: str | None = None
) -> str:
    """The name of the version ``sample`` was drawn from: ``drawn_from`` (checked), else the
    first of ``predictions`` that can be it (:meth:`DesignSample.check_prediction`); a
    ValueError saying why when none can."""
    if drawn_from is not None:
        if drawn_from not in predictions:
            raise ValueError(
                f"the recommended design was drawn from version {drawn_from!r}, which is not "
                f"among the versions {list(predictions)}"
            )
        sample.check_prediction(predictions[drawn_from], drawn_from)
        return drawn_from
    reasons = []
    for name, prediction in predictions.items():
        try:
            sample.check_prediction(prediction, name)
        except ValueError as error:
            reasons.append(str(error))
            continue
        return name
    if len(reasons) == 1:
        raise ValueError(reasons[0])
    raise ValueError(
        "none of the versions is the prediction the recommended design was drawn from: "
        + "; ".join(reasons)
    )


def design_estimates(
    predictions: Mapping[str, pd.Series],
    sample: DesignSample,
    drawn: str,
    metrics: Sequence[str],
    *,
    level: float,
    ci_method: str | None,
    on_missing: str,
) -> pd.DataFrame:
    """One table of estimates in the order of ``predictions``: the version ``drawn`` by
    :meth:`DesignSample.estimates` (:func:`~er_evaluation.recommend.estimate_design`: the
    figures of ``er-eval estimate`` and ``er-eval review estimate``), every other version
    by :func:`~er_evaluation.estimators.estimate_table` on the records drawn for recall
    alone (a uniform record sample, the one sample all versions share)."""
    table = sample.estimates(predictions[drawn], name=drawn, level=level)
    parts = {drawn: table[table["metric"].isin(metrics)]}
    others = {name: p for name, p in predictions.items() if name != drawn}
    if others:
        rest = estimate_table(
            others,
            sample.recall,
            list(metrics),
            level=level,
            ci_method=ci_method,
            on_missing=on_missing,
        )
        parts.update({name: rows for name, rows in rest.groupby("prediction", sort=False)})
    return pd.concat([parts[name] for name in predictions], ignore_index=True)


def design_strata(prediction: pd.Series, sample: DesignSample, name: str) -> pd.DataFrame:
    """Per-stratum contributions to the precision of the version the design was drawn
    from (:func:`~er_evaluation.estimators.stratum_contributions` on its predicted
    clusters; the take-all stratum is exact and adds no variance)."""
    return stratum_contributions(
        prediction, sample.precision_of(prediction), "pairwise_precision"
    ).assign(metric="pairwise_precision", prediction=name)


def design_description(
    sample: DesignSample, drawn: str, extra: Iterable[tuple[str, object]] = ()
) -> pd.DataFrame:
    """The recommended design's two samples as rows of (item, value): the take-all part,
    the size bands, the record draws for recall and the records read."""
    strata = sample.precision.strata
    design = sample.drawn
    stratum_of = design.clusters.reindex(design.members.to_numpy()).to_numpy()
    records = pd.Series(1, index=stratum_of).groupby(level=0).sum()
    bands = [
        (name, int(n), int(f))
        for name, n, f in zip(strata.names, strata.n_draws, strata.frame_size, strict=True)
    ]
    take_all = [(n, f) for name, n, f in bands if name == TAKE_ALL]
    rows: list[tuple[str, object]] = [
        (
            "design",
            "recommended: predicted clusters reviewed whole for precision (the largest all "
            "of them, the others drawn within bands of predicted size), records drawn "
            "uniformly for recall",
        ),
        ("drawn from version", drawn),
        (
            "population",
            f"{design.n_records:,} records, {design.predicted_links:,} predicted links",
        ),
        (
            "take-all part",
            f"{take_all[0][0]:,} largest predicted clusters reviewed whole, "
            f"{int(records.get(TAKE_ALL, 0)):,} records (exact: no sampling error)"
            if take_all
            else "none",
        ),
        (
            "size bands",
            ", ".join(
                f"{name} records: {n:,} of {f:,} predicted clusters "
                f"({int(records.get(name, 0)):,} records)"
                for name, n, f in bands
                if name != TAKE_ALL
            )
            or "none",
        ),
    ]
    recall = sample.recall
    if design.benchmark is not None:
        rows.append(
            (
                "recall",
                f"an existing uniform record benchmark: {recall.n_units:,} true clusters, "
                f"{recall.n_records:,} records",
            )
        )
    else:
        rows.append(
            (
                "record draws for recall",
                f"{recall.n_draws:,} records drawn uniformly with replacement, reaching "
                f"{recall.n_units:,} true clusters of {recall.n_records:,} records",
            )
        )
    rows.append(("records read", f"{sample.n_records:,}"))
    shown = {item for item, _ in rows}
    rows += [(item, value) for item, value in extra if item not in shown]
    return pd.DataFrame(rows, columns=["item", "value"]).astype({"value": str})
