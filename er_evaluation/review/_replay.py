"""Replay of the event log: which decisions are in force, the true clusters they imply,
and where decisions contradict each other.

Rules (the store never changes an event, so everything here is derived):

- an undo event cancels the event it points at; a cancelled event has no effect;
- the decision in force for a sampled record is its latest effective adjudication, or,
  without one, its latest effective review by anyone;
- each reviewer's own decision on a record is their latest effective review of it (used
  for double review: agreement, and estimates under one reviewer's decisions).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from er_evaluation.clustering import from_pairs
from er_evaluation.errors import plain_id
from er_evaluation.review._model import ReviewError, ReviewEvent, encode

CONFLICT_COLUMNS = (
    "kind",
    "sampled_record",
    "record",
    "reviewer",
    "event_id",
    "other_reviewer",
    "other_event_id",
    "cluster",
    "included_by",
)


def effective(events: Iterable[ReviewEvent]) -> list[ReviewEvent]:
    """Decision events (not undos) that no undo cancelled, in save order."""
    events = list(events)
    cancelled = {e.undoes for e in events if e.status == "undo"}
    return [e for e in events if e.status != "undo" and e.event_id not in cancelled]


def _by_record(events: Iterable[ReviewEvent]) -> dict[str, list[ReviewEvent]]:
    groups: dict[str, list[ReviewEvent]] = {}
    for event in events:
        groups.setdefault(encode(event.sampled_record), []).append(event)
    return groups


def in_force(group: Sequence[ReviewEvent]) -> ReviewEvent | None:
    """The decision in force among one record's effective events (save order)."""
    adjudications = [e for e in group if e.role == "adjudication"]
    if adjudications:
        return adjudications[-1]
    return group[-1] if group else None


def current(events: Iterable[ReviewEvent]) -> list[ReviewEvent]:
    """The decision in force per sampled record, ordered by when it was saved."""
    chosen = [in_force(g) for g in _by_record(effective(events)).values()]
    return sorted((e for e in chosen if e is not None), key=lambda e: e.event_id)


def own_decisions(events: Iterable[ReviewEvent]) -> list[ReviewEvent]:
    """Each reviewer's latest effective review (not adjudication) of each sampled record."""
    latest: dict[tuple[str, str], ReviewEvent] = {}
    for event in effective(events):
        if event.role == "review":
            latest[(encode(event.sampled_record), event.reviewer)] = event
    return sorted(latest.values(), key=lambda e: e.event_id)


def with_reviewer(events: Iterable[ReviewEvent], reviewer: str) -> list[ReviewEvent]:
    """Decisions in force, except that where ``reviewer`` decided a record themselves their
    own decision is used: the benchmark as that reviewer alone would have made it."""
    events = list(events)
    chosen = {encode(e.sampled_record): e for e in current(events)}
    for event in own_decisions(events):
        if event.reviewer == reviewer:
            chosen[encode(event.sampled_record)] = event
    return sorted(chosen.values(), key=lambda e: e.event_id)


def derive(decisions: Sequence[ReviewEvent]) -> tuple[pd.Series, pd.DataFrame]:
    """True clusters (membership Series) and merged-back conflicts of the given decisions.

    Each non-skipped decision gives a true cluster (shown - removed + added). Clusters
    that share a record are one entity and are merged (connected components of the
    sampled record linked to each member). A merged cluster is labelled with the sampled
    record of its earliest decision.
    """
    decided = [e for e in decisions if e.status != "skipped"]
    if not decided:
        raise ReviewError("no review decisions yet: nothing to derive true clusters from")
    lefts = [e.sampled_record for e in decided for _ in e.true_cluster]
    rights = [r for e in decided for r in e.true_cluster]
    members = pd.Index(pd.unique(pd.Series(rights, dtype=object))).infer_objects()
    pairs = pd.DataFrame({"left": lefts, "right": rights}, dtype=object)
    components = from_pairs(pairs, records=members, name="reviewed clusters")
    sampled = pd.Index([e.sampled_record for e in decided]).infer_objects()
    comp_of_sampled = components.loc[sampled].to_numpy()
    first = pd.Series(sampled.to_numpy(), dtype=object).groupby(comp_of_sampled).first()
    labels = pd.Series(
        first.reindex(components.to_numpy()).to_numpy(), index=components.index
    ).infer_objects()
    labels.index.name = "record_id"
    labels.name = "cluster_id"

    included_by: dict[Any, list] = {}
    for e in decided:
        for r in e.true_cluster:
            included_by.setdefault(r, []).append(e.sampled_record)
    rows = []
    for e in decided:
        home = components.loc[e.sampled_record]
        for r in e.removed:
            if r in included_by and components.loc[r] == home:
                rows.append(
                    {
                        "kind": "merged_back",
                        "sampled_record": e.sampled_record,
                        "record": r,
                        "reviewer": e.reviewer,
                        "event_id": e.event_id,
                        "other_reviewer": None,
                        "other_event_id": None,
                        "cluster": plain_id(labels.loc[r]),
                        "included_by": tuple(included_by[r]),
                    }
                )
    return labels, conflict_frame(rows)


def disagreements(events: Sequence[ReviewEvent]) -> pd.DataFrame:
    """Records on which two reviewers' own decisions differ (different true clusters),
    neither decision was saved over the other (``based_on``), and no adjudication settles
    them. One row per such pair of decisions."""
    events = list(events)
    settled = {encode(e.sampled_record) for e in effective(events) if e.role == "adjudication"}
    rows = []
    for key, group in _by_record(own_decisions(events)).items():
        if key in settled:
            continue
        decided = [e for e in group if e.status != "skipped"]
        for i, a in enumerate(decided):
            for b in decided[i + 1 :]:
                if set(a.true_cluster) == set(b.true_cluster) or b.based_on == a.event_id:
                    continue
                rows.append(
                    {
                        "kind": "reviewers_disagree",
                        "sampled_record": a.sampled_record,
                        "record": a.sampled_record,
                        "reviewer": a.reviewer,
                        "event_id": a.event_id,
                        "other_reviewer": b.reviewer,
                        "other_event_id": b.event_id,
                        "cluster": None,
                        "included_by": (),
                    }
                )
    return conflict_frame(rows)


def conflict_frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(CONFLICT_COLUMNS)).astype(object)
    frame["event_id"] = frame["event_id"].astype("int64")
    frame["other_event_id"] = frame["other_event_id"].astype("Int64")
    return frame
