"""A review project: the one workflow object behind the review app and ``er-eval review``.

:class:`Project` holds a project folder's data, reviewers, sample design, review queue,
review store and drafts, and carries out every step of the hand-review workflow of
Binette et al. (2023, section 2.2), so the app and the command line apply the same
rules: who may record a decision, which decisions count for the current sample, what a
blind double review hides, how a conflict between two reviewers is kept for
adjudication, which benchmark the estimates use and the export writes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from er_evaluation._sample_file import write_drawn, write_sample
from er_evaluation.errors import plain_id
from er_evaluation.io import write_table_atomic
from er_evaluation.recommend import DesignSample, RecommendedDesign, recommend_design
from er_evaluation.review._agreement import Agreement, agreement
from er_evaluation.review._checks import find_reviewer
from er_evaluation.review._data import (
    DEMO_SOURCE,
    ProjectData,
    check_files,
    keep_uploads,
    load_data,
)
from er_evaluation.review._design import (
    double_reviewed,
    draw_queue,
    finished_units,
    recommended_sample,
    reviewed_sample,
    workload,
)
from er_evaluation.review._drafts import Draft, Drafts
from er_evaluation.review._estimates import (
    Estimable,
    change_differences,
    checked_choice,
    estimable,
    version_estimates,
)
from er_evaluation.review._folder import (
    CONFIG_NAME,
    DRAFTS_NAME,
    QUEUE_NAME,
    STORE_NAME,
    is_project,
    read_config,
    write_config,
)
from er_evaluation.review._model import ReviewError, ReviewEvent, encode
from er_evaluation.review._replay import current, effective
from er_evaluation.review._resolve import merged
from er_evaluation.review._settings import DEFAULT_SIZE, DataSource, SampleSettings, roster
from er_evaluation.review._sheet import parse_sheet
from er_evaluation.review._store import ReviewStore
from er_evaluation.sampling import Sample

_DATA_KEYS = ("source", "records", "predictions", "benchmark")  # project.json's data entries
#: what becomes of decisions already saved when a new sample is drawn over them
EARLIER = ("exclude", "include")


class RedrawError(ReviewError):
    """Drawing a new sample over saved decisions without saying whether they count for it
    (``earlier="exclude"`` or ``"include"``); nothing was changed. ``decisions`` is the
    number of decisions in force for the current sample."""

    def __init__(self, message: str, *, decisions: int) -> None:
        super().__init__(message)
        self.decisions = decisions


@dataclass(frozen=True)
class OpenDisagreements:
    """Records two reviewers decided differently with no adjudication yet, and which
    decision the estimates use for each meanwhile (the later one, as for any record).
    ``table``: one row per record (``sampled_record, reviewers, in_force_reviewer,
    in_force_event``)."""

    table: pd.DataFrame

    def __len__(self) -> int:
        return len(self.table)

    @property
    def note(self) -> str | None:
        """One sentence for beside the estimates, or None when there is none."""
        return self.note_under(None)

    def note_under(self, reviewer: str | None) -> str | None:
        """:attr:`note` for figures under ``reviewer``'s own decisions (None: the decisions
        in force), which use that reviewer's decision on the records they decided."""
        if self.table.empty:
            return None
        used = self.table["in_force_reviewer"]
        if reviewer is not None:
            theirs = self.table["reviewers"].str.split(", ").map(lambda names: reviewer in names)
            used = used.where(~theirs, reviewer)
        counts = used.value_counts()
        whose = ", ".join(f"{name}'s on {n}" for name, n in counts.items())
        rule = (
            "the later decision on each"
            if reviewer is None
            else (f"{reviewer}'s own decision where {reviewer} made one, else the later one")
        )
        n = len(self.table)
        return (
            f"{n} record{'s' if n > 1 else ''} decided differently by two reviewers "
            f"{'are' if n > 1 else 'is'} not adjudicated yet: these figures use {rule} "
            f"({whose}). Settle them on the Adjudication page (er-eval review adjudicate), "
            "or compare the figures under each reviewer's own decisions."
        )


class Project:
    """A review project folder: its data, reviewers, sample design, queue, store and drafts.

    Open one with :meth:`open` (or make one with :meth:`init`). Reading methods see the
    decisions that count for the current sample (saved after
    :attr:`SampleSettings.after_event`); every write goes through a method that applies
    the project's rules. ``data`` is loaded once per opening (``load`` may supply a cached
    loader: the app shares one copy between its sessions).
    """

    def __init__(self, folder: Path, config: dict, data: ProjectData) -> None:
        self.folder = folder
        self._config = config
        self.data = data
        self.store = ReviewStore(folder / STORE_NAME)
        self.drafts = Drafts(folder / DRAFTS_NAME)
        self.queue = self._read_queue()
        self._recommended: dict[tuple[str, int], RecommendedDesign] = {}

    # ------------------------------------------------------------- opening and settings

    @classmethod
    def open(
        cls,
        folder: str | os.PathLike,
        *,
        create: bool = False,
        load: Callable[[dict], ProjectData] = load_data,
    ) -> Project:
        """Open the project in ``folder`` (a :class:`ReviewError` names what is missing).
        With ``create``, a folder without a project (or no folder yet) opens as a new
        project on the bundled demo data."""
        path = Path(folder).expanduser().absolute()
        if not path.is_dir():
            if not create:
                raise ReviewError(f"{path}: no such project folder")
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise ReviewError(f"{path}: cannot create the project folder: {err}") from err
        elif not create and not is_project(path):
            raise ReviewError(
                f"{path}: not a review project (no {CONFIG_NAME}, {QUEUE_NAME} or {STORE_NAME})"
            )
        config = read_config(path) or json.loads(json.dumps(DEMO_SOURCE))
        if not (path / STORE_NAME).exists() and not os.access(path, os.W_OK | os.X_OK):
            raise ReviewError(f"{path}: read-only and without a review store: nothing to read")
        return cls(path, config, load(_source_of(config)))

    @classmethod
    def init(
        cls,
        folder: str | os.PathLike,
        *,
        source: Mapping | None = None,
        uploads: Mapping[str, bytes] | None = None,
        reviewers: Iterable[str] = (),
    ) -> Project:
        """Make a new project in ``folder`` (created if needed; one holding a project
        already is refused): the bundled demo data (``source=None``) or the files
        ``source`` describes (see :meth:`set_source`), and the reviewers' names."""
        path = Path(folder).expanduser().absolute()
        if path.exists() and not path.is_dir():
            raise ReviewError(f"{path} is a file, not a folder")
        if path.is_dir() and is_project(path):
            raise ReviewError(f"{path}: already holds a review project")
        names = roster(reviewers)
        config: dict[str, Any] = {"reviewers": list(names)}
        if source is None:
            data = load_data(DEMO_SOURCE)
            config |= DEMO_SOURCE
        else:
            data = check_files(source, uploads or {})
            path.mkdir(parents=True, exist_ok=True)
            config |= keep_uploads(source, uploads or {}, path)
        write_config(config, path)
        return cls(path, config, data)

    @property
    def source(self) -> DataSource:
        """Where the data comes from (the demo, or the files, columns and versions)."""
        return DataSource.from_dict(self._config)

    @property
    def settings(self) -> SampleSettings | None:
        """The sample design of the current queue (None before a sample is drawn)."""
        stored = self._config.get("sample")
        return None if stored is None else SampleSettings.from_dict(stored)

    @property
    def after(self) -> int:
        """Decisions saved after this event count for the current sample."""
        settings = self.settings
        return 0 if settings is None else settings.after_event

    def set_source(self, source: Mapping, uploads: Mapping[str, bytes] | None = None) -> None:
        """Use the files ``source`` describes (``records``, ``predictions``, optional
        ``benchmark``; a path ``upload:NAME`` stands for ``uploads[NAME]``). Everything is
        loaded and validated before anything is written; uploads are then kept under
        ``inputs/`` with fresh names. The data is reloaded."""
        data = check_files(source, uploads or {})
        kept = keep_uploads(source, uploads or {}, self.folder)
        others = {k: v for k, v in self._config.items() if k not in _DATA_KEYS}
        self._write(others | kept)
        self.data = data

    def use_demo(self) -> None:
        """Use the bundled PatentsView demo data."""
        config = {
            k: v
            for k, v in self._config.items()
            if k not in ("records", "predictions", "benchmark")
        }
        self._write(config | DEMO_SOURCE)
        self.data = load_data(DEMO_SOURCE)

    def _write(self, config: dict) -> None:
        write_config(config, self.folder)
        self._config = config

    # ------------------------------------------------------------------ reviewers

    @property
    def reviewers(self) -> tuple[str, ...]:
        """The project's reviewers. A project saved before reviewers were listed takes
        the names of its queue and its saved decisions."""
        if "reviewers" in self._config:
            return tuple(self._config["reviewers"])
        names: dict[str, str] = {}
        if self.queue is not None:
            for col in ("reviewer", "second_reviewer"):
                for name in self.queue[col].dropna():
                    names.setdefault(str(name).casefold(), str(name))
        for event in self.store.event_list():
            names.setdefault(event.reviewer.casefold(), event.reviewer)
        return tuple(names.values())

    def reviewer(self, name: Any) -> str:
        """The project's spelling of reviewer ``name`` (case ignored); an unknown name is
        a :class:`ReviewError` listing the reviewers."""
        return find_reviewer(name, self.reviewers)

    def add_reviewers(self, names: Iterable[str]) -> list[str]:
        """Add reviewers (a name already listed, in any case, is that reviewer); returns
        the project's spelling of each name given."""
        known = list(self.reviewers)
        out = []
        for name in roster(names):
            try:
                out.append(find_reviewer(name, known))
            except ReviewError:
                known.append(name)
                out.append(name)
        if out and (known != list(self.reviewers) or "reviewers" not in self._config):
            self._write({**self._config, "reviewers": known})
        return out

    # ------------------------------------------------------------------ the sample

    def _read_queue(self) -> pd.DataFrame | None:
        path = self.folder / QUEUE_NAME
        if not path.exists() or self._config.get("sample") is None:
            return None
        queue = pd.read_parquet(path)
        if "second_reviewer" not in queue:
            queue["second_reviewer"] = pd.Series(
                [None] * len(queue), index=queue.index, dtype=object
            )
        return queue

    def default_settings(self) -> SampleSettings:
        """What a new project opens with: records drawn uniformly from the newest version."""
        return SampleSettings(
            design="records", size=DEFAULT_SIZE, seed=1, version=self.data.versions[-1]
        )

    def queue_problem(self) -> str | None:
        """Why the saved sample no longer fits the project data, or None when it does (or
        none is drawn)."""
        settings = self.settings
        if settings is None or self.queue is None:
            return None
        for version in (settings.version, settings.other_version):
            if version is not None and version not in self.data.predictions:
                return f"version {version!r} is not in the current data"
        # get_indexer uses the index's cached hash table (Series.isin rehashes 133k ids: 1.5 s)
        stale = self.data.records.index.get_indexer(self.queue["record_id"]) < 0
        if stale.any():
            return f"{int(stale.sum())} sampled records are not in the current records"
        return None

    def _check_queue(self) -> tuple[SampleSettings, pd.DataFrame]:
        settings = self.settings
        if self.queue is None or settings is None:
            raise ReviewError(f"{self.folder}: no sample drawn yet ({QUEUE_NAME} is missing)")
        problem = self.queue_problem()
        if problem:
            raise ReviewError(
                f"{self.folder}: the saved sample no longer fits the data ({problem})"
            )
        return settings, self.queue

    def draw(self, settings: SampleSettings, *, earlier: str | None = None) -> pd.DataFrame:
        """Draw the review queue of ``settings`` and save it with them.

        When decisions are already saved for the current sample, ``earlier`` must say
        what becomes of them: ``"exclude"`` (the new sample counts only decisions saved
        from now on; they stay in the store's history) or ``"include"`` (they count, as
        they were made; refused for a blind double review, which counts only decisions
        made blind for it). Without it a :class:`RedrawError` says how many there are and
        nothing changes. Reviewers who split the queue are added to the project's
        reviewers; drafts of the old queue are dropped.
        """
        if earlier is not None and earlier not in EARLIER:
            raise ReviewError(f"earlier must be one of {EARLIER}, got {earlier!r}")
        for version in (settings.version, settings.other_version):
            if version is not None and version not in self.data.predictions:
                raise ReviewError(
                    f"version {version!r} is not in the project's data {self.data.versions}"
                )
        saved = self.store.decisions(after=self.after)
        if len(saved) and earlier is None:
            who = ", ".join(f"{n} by {r}" for r, n in saved["reviewer"].value_counts().items())
            raise RedrawError(
                f"{len(saved)} decision(s) are saved for the current sample ({who}): say "
                "whether they count for the new one (exclude: they stay in the history; "
                "include: they count as they were made)",
                decisions=len(saved),
            )
        if earlier == "include" and settings.double_share > 0 and len(saved):
            raise ReviewError(
                "a blind double review counts only decisions made blind for it: earlier "
                "decisions cannot count (exclude them)"
            )
        after = self.store.last_event_id() if earlier == "exclude" else self.after
        settings = SampleSettings.from_dict({**settings.to_dict(), "after_event": after})
        self.add_reviewers(settings.reviewers)
        queue = draw_queue(
            self.data.predictions[settings.version],
            design=settings.design,
            size=settings.size,
            seed=settings.seed,
            blocks=self.data.blocks,
            reviewers=settings.reviewers,
            double_share=settings.double_share,
            recommended=self.recommended(settings),
            **self._strata_options(settings),
        )
        write_table_atomic(queue, self.folder / QUEUE_NAME)
        self._write({**self._config, "sample": settings.to_dict()})
        self.drafts.clear()
        self.queue = self._read_queue()
        return self.queue

    def _strata_options(self, settings: SampleSettings) -> dict:
        other = settings.other_version
        return {
            "take_all_size": settings.take_all_size,
            "other": self.data.predictions[other] if other is not None else None,
        }

    def recommended(self, settings: SampleSettings | None = None) -> RecommendedDesign | None:
        """The recommended design of ``settings`` (default: the current sample's) for its
        version and budget of records (:func:`~er_evaluation.recommend.recommend_design`),
        or None for another design."""
        settings = self.settings if settings is None else settings
        if settings is None or settings.design != "recommended":
            return None
        key = (settings.version, settings.size)
        if key not in self._recommended:
            try:
                design = recommend_design(
                    self.data.predictions[settings.version], records=settings.size
                )
            except ValueError as err:
                raise ReviewError(f"cannot recommend a design: {err}") from err
            self._recommended[key] = design
        return self._recommended[key]

    def true_clusters(self, *, reviewer: str | None = None) -> pd.Series:
        """The true clusters of the decisions that count (with ``reviewer``: under that
        reviewer's own decisions where they made one); empty before the first one."""
        if reviewer is not None:
            reviewer = self.reviewer(reviewer)
        if not self.store.reviewed_records(after=self.after):
            return pd.Series([], index=pd.Index([], dtype=object), dtype=object)
        return self.store.true_clusters(reviewer=reviewer, after=self.after)

    def sample(self, *, reviewer: str | None = None) -> tuple[Sample | DesignSample | None, int]:
        """The design-based sample of the finished units of the queue, and their number
        (``(None, 0)`` before the first one): the one sample the estimates use, the export
        writes and the status counts (see :func:`~er_evaluation.review.reviewed_sample`;
        the recommended design's two samples: :func:`~er_evaluation.review.recommended_sample`)."""
        settings, queue = self._check_queue()
        if settings.design == "recommended":
            return recommended_sample(
                queue, self.true_clusters(reviewer=reviewer), self.recommended(settings)
            )
        return reviewed_sample(
            queue,
            self.true_clusters(reviewer=reviewer),
            design=settings.design,
            prediction=self.data.predictions[settings.version],
            blocks=self.data.blocks,
            **self._strata_options(settings),
        )

    def export(self, path: str | os.PathLike, *, reviewer: str | None = None) -> tuple[Path, Path]:
        """Write the benchmark the estimates use (the reviewed true clusters of the
        sample's finished units) as a membership file (``record_id, cluster_id``; CSV or
        Parquet by suffix), and beside it the sample's design (``NAME.sample.json``), from
        which ``er-eval estimate --reference FILE`` rebuilds the same sample. Returns both
        paths."""
        sample, _ = self.sample(reviewer=reviewer)
        if sample is None:
            raise ReviewError(f"{self.folder}: no finished unit yet: nothing to export")
        settings = self.settings
        description = {
            "project": str(self.folder),
            "version": settings.version,
            "reviewer": reviewer,
        }
        if isinstance(sample, DesignSample):
            return write_drawn(
                sample.drawn, path, reference=sample.reference, description=description
            )
        return write_sample(sample, path, description=description)

    # ------------------------------------------------------------------ estimates

    def estimable(self, sample: Sample) -> Estimable:
        """The versions and metrics this project's sample estimates."""
        return estimable(self.settings, sample, self.data.versions)

    def estimates(
        self,
        *,
        versions: Sequence[str] | None = None,
        metrics: Sequence[str] | None = None,
        reviewer: str | None = None,
    ) -> pd.DataFrame:
        """Estimates from the reviewed sample, one row per version x metric (columns of
        :func:`~er_evaluation.estimators.estimate_table`); for a change design, the
        paired differences of its two versions (``attrs["refused"]``: the metrics it
        cannot estimate, with the reason). ``reviewer``: under that reviewer's own
        decisions where they made one."""
        from er_evaluation.estimators.results import estimates_frame

        sample, _ = self.sample(reviewer=reviewer)
        if sample is None:
            raise ReviewError(f"{self.folder}: no finished review yet: nothing to estimate")
        allowed = self.estimable(sample)
        if self.settings.design == "change" and versions and set(versions) != set(allowed.versions):
            a, b = allowed.versions
            raise ReviewError(
                f"a sample of changed records estimates only the difference {b} − {a}: give "
                f"both versions ({a}, {b}) or none"
            )
        versions, metrics = checked_choice(allowed, versions, metrics)
        if isinstance(sample, DesignSample):
            return version_estimates(self.data.predictions, sample, versions, metrics)
        if self.settings.design == "change":
            differences, refused = self.differences(sample, metrics)
            if not differences:
                raise ReviewError(
                    "no metric can be estimated from this change sample: "
                    + "; ".join(f"{m}: {r}" for m, r in refused.items())
                )
            table = estimates_frame(differences.values())
            table.attrs["refused"] = refused  # the metrics left out, and why
            return table
        return version_estimates(self.data.predictions, sample, versions, metrics)

    def differences(self, sample: Sample, metrics: Iterable[str]):
        """Paired differences of a change-design sample and the metrics it cannot estimate
        (see :func:`~er_evaluation.review._estimates.change_differences`)."""
        return change_differences(
            self.data.predictions, self.data.benchmark, self.settings, sample, metrics
        )

    def reviewer_estimates(
        self, *, versions: Sequence[str], metrics: Sequence[str]
    ) -> pd.DataFrame:
        """Estimates under each reviewer's own decisions, one row per reviewer x version x
        metric (plus a ``reviewer`` column); empty unless at least two reviewers decided
        some record of the sample themselves. Where a reviewer made no decision the
        decision in force is used, so the spread between reviewers comes from the records
        they decided differently: a direct measure of reviewer uncertainty, beside the
        sampling uncertainty of each estimate."""
        own = self.store.own_decisions(after=self.after)
        own = own[(own["status"] != "skipped") & self._in_queue(own["sampled_record"])]
        doubled = own.groupby(own["sampled_record"].map(_key))["reviewer"].transform("nunique") > 1
        reviewers = sorted(own.loc[doubled, "reviewer"].unique())
        if len(reviewers) < 2:
            return pd.DataFrame()
        parts = []
        for reviewer in reviewers:  # one estimate per reviewer, not per record
            sample, _ = self.sample(reviewer=reviewer)
            if sample is None:
                continue
            table = version_estimates(self.data.predictions, sample, versions, metrics)
            parts.append(table.assign(reviewer=reviewer))
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    # ------------------------------------------------------------------ double review

    def _in_queue(self, records: pd.Series) -> pd.Series:
        if self.queue is None:
            return pd.Series(False, index=records.index)
        keys = set(map(_key, self.queue["record_id"]))
        return records.map(_key).isin(keys)

    def _queue_events(self) -> list[ReviewEvent]:
        """The events that count for the sample, on records of its queue."""
        if self.queue is None:
            return []
        keys = set(map(_key, self.queue["record_id"]))
        return [
            e for e in self.store.event_list(after=self.after) if _key(e.sampled_record) in keys
        ]

    def agreement(self) -> Agreement:
        """Agreement of the records of the queue decided by two reviewers for this sample
        (see :func:`~er_evaluation.review.agreement`)."""
        return agreement(self._queue_events())

    def conflicts(self) -> pd.DataFrame:
        """Contradicting decisions that count for the sample (see
        :meth:`ReviewStore.conflicts`)."""
        return self.store.conflicts(after=self.after)

    def disagreements(self) -> OpenDisagreements:
        """Records of the queue two reviewers decided differently, not adjudicated yet."""
        conflicts = self.conflicts()
        rows = conflicts[
            (conflicts["kind"] == "reviewers_disagree")
            & self._in_queue(conflicts["sampled_record"])
        ]
        in_force = {_key(e.sampled_record): e for e in current(self._queue_events())}
        table = pd.DataFrame(
            {
                "sampled_record": rows["sampled_record"].to_numpy(),
                "reviewers": [
                    f"{a}, {b}"
                    for a, b in zip(rows["reviewer"], rows["other_reviewer"], strict=True)
                ],
                "in_force_reviewer": [in_force[_key(r)].reviewer for r in rows["sampled_record"]],
                "in_force_event": [in_force[_key(r)].event_id for r in rows["sampled_record"]],
            }
        ).drop_duplicates("sampled_record")
        return OpenDisagreements(table.reset_index(drop=True))

    # ------------------------------------------------------------------ reviewing

    def members(self, record: Any) -> tuple[Any, list]:
        """The predicted cluster id of ``record`` in the sample's version and its records,
        the sampled record first (``(None, [record])`` when the version lacks it)."""
        settings = self._check_queue()[0]
        prediction = self.data.predictions[settings.version]
        pos = prediction.index.get_indexer([record])[0]
        if pos < 0:
            return None, [record]
        cluster = prediction.iloc[pos]
        members = prediction.index[prediction.to_numpy() == cluster]
        return cluster, [record, *members.drop(record)]

    def blind(self, record: Any, reviewer: str) -> bool:
        """Is ``record`` in a unit double-reviewed with ``reviewer`` as one of its two
        reviewers? Such a reviewer sees and replaces only their own decision on it."""
        if self.queue is None:
            return False
        rows = self.queue[self.queue["record_id"].map(_key) == _key(record)]
        mine = (rows["reviewer"] == reviewer) | (rows["second_reviewer"] == reviewer)
        return bool((double_reviewed(rows) & mine).any())

    def decision(self, record: Any, reviewer: str | None = None) -> ReviewEvent | None:
        """The decision ``reviewer`` works on: their own for a blind double-reviewed
        record, else the decision in force (None when none counts for the sample)."""
        if reviewer is not None and self.blind(record, reviewer):
            return self.store.decision(record, reviewer=reviewer, after=self.after)
        return self.store.decision(record, after=self.after)

    def save(
        self,
        reviewer: str,
        record: Any,
        *,
        removed: Iterable = (),
        added: Iterable = (),
        notes: str = "",
        based_on: int | None,
    ) -> ReviewEvent:
        """Record ``reviewer``'s decision on queue item ``record`` (its predicted cluster in
        the sample's version, minus ``removed``, plus ``added``), bound to the decision the
        reviewer saw (``based_on``): if another one is in force now, nothing is written and
        :class:`StaleReviewError` carries it (see :meth:`keep_both` and :meth:`merge`). The
        reviewer's draft of the item is dropped once the decision is saved (as by every
        decision written: see :meth:`_supersede_drafts`)."""
        reviewer = self.reviewer(reviewer)
        self._check_item(record)
        return self._record(
            reviewer,
            record,
            self.members(record),
            removed,
            added,
            notes,
            based_on=based_on,
            independent=self.blind(record, reviewer),
        )

    def _record(
        self, reviewer: str, record: Any, shown: tuple[Any, list], removed, added, notes: str, **how
    ) -> ReviewEvent:
        """Write one decision on ``record`` in the sample's version; ``shown``: the
        predicted cluster and its records as the reviewer saw them; ``how``: how the
        decision relates to the others (``based_on``, ``independent``, ``adjudication``)."""
        cluster, members = shown
        event = self.store.record_review(
            reviewer=reviewer,
            sampled_record=record,
            predicted_cluster=cluster,
            shown_records=members,
            removed=removed,
            added=added,
            notes=notes,
            version=self.settings.version,
            after=self.after,
            **how,
        )
        self._supersede_drafts([(event.reviewer, event.sampled_record)])
        return event

    def _supersede_drafts(self, decided: Iterable[tuple[str, Any]]) -> None:
        """Drop each ``(reviewer, sampled record)``'s draft: a stored decision, whichever
        way it came (save, conflict resolution, adjudication, sheet import, also a sheet
        row repeating the reviewer's decision), replaces the unsaved edit its reviewer
        made before it, which would otherwise be shown again on top of it. Only drafts
        go; a decision is never deleted."""
        for reviewer, record in decided:
            self.drafts.discard(reviewer, record)

    def keep_both(self, reviewer: str, record: Any, draft: Draft) -> ReviewEvent:
        """Resolve a refused save by keeping both decisions as made: ``reviewer``'s own
        decision (``draft``) is recorded beside the one saved meanwhile, not over it, and
        where they differ the record waits for adjudication (:meth:`disagreements`)."""
        reviewer = self.reviewer(reviewer)
        self._check_item(record)
        own = self.store.decision(record, reviewer=reviewer, after=self.after)
        return self._record(
            reviewer,
            record,
            self.members(record),
            draft.removed,
            draft.added,
            draft.notes,
            based_on=None if own is None else own.event_id,
            independent=True,
        )

    @staticmethod
    def merge(draft: Draft, theirs: ReviewEvent) -> Draft:
        """A new decision that starts from both: see :func:`~er_evaluation.review.merged`.
        It is only a draft: the reviewer sees it in full and saves it (bound to
        ``theirs``) or not."""
        return merged(draft, theirs)

    def keep_draft(self, reviewer: str, record: Any, draft: Draft) -> Draft | None:
        """Keep ``reviewer``'s unsaved edit of ``record`` (an empty edit that changes
        nothing is forgotten instead); returns the kept draft."""
        reviewer = self.reviewer(reviewer)
        shown = self.decision(record, reviewer)
        same = shown is not None and (
            set(shown.removed) == set(draft.removed)
            and set(shown.added) == set(draft.added)
            and shown.notes == draft.notes
        )
        if same or (shown is None and draft.empty):
            self.drafts.discard(reviewer, record)
            return None
        return self.drafts.put(reviewer, record, draft)

    def draft(self, reviewer: str, record: Any) -> Draft | None:
        """``reviewer``'s unsaved edit of ``record``, or None."""
        return self.drafts.get(self.reviewer(reviewer), record)

    def undo(
        self,
        reviewer: str,
        record: Any,
        *,
        event_id: int | None = None,
        confirm_other: bool = False,
    ) -> ReviewEvent:
        """Cancel a decision on ``record`` (see :meth:`ReviewStore.undo`)."""
        return self.store.undo(
            reviewer=self.reviewer(reviewer),
            sampled_record=record,
            event_id=event_id,
            confirm_other=confirm_other,
        )

    def adjudicate(
        self,
        adjudicator: str,
        record: Any,
        *,
        keep: str | None = None,
        removed: Iterable = (),
        added: Iterable = (),
        notes: str = "",
        based_on: int | None | str = "current",
    ) -> ReviewEvent:
        """Record the final decision on a record two reviewers decided differently: the
        decision of reviewer ``keep`` as they made it, or the adjudicator's own
        (``removed``, ``added``). ``based_on``: the decision in force the adjudicator saw
        (default: the one in force now)."""
        adjudicator = self.reviewer(adjudicator)
        open_items = self.disagreements().table
        if not (open_items["sampled_record"].map(_key) == _key(record)).any():
            raise ReviewError(f"{record!r} has no disagreement between reviewers to adjudicate")
        shown = self.members(record)
        if keep is not None:
            keep = self.reviewer(keep)
            chosen = self.store.decision(record, reviewer=keep, after=self.after)
            if chosen is None:
                raise ReviewError(f"{keep} has no decision on {record!r} to keep")
            removed, added = chosen.removed, chosen.added
            notes = notes or chosen.notes
            shown = chosen.predicted_cluster, list(chosen.shown_records)
        if based_on == "current":
            now = self.store.decision(record, after=self.after)
            based_on = None if now is None else now.event_id
        return self._record(
            adjudicator, record, shown, removed, added, notes, based_on=based_on, adjudication=True
        )

    def import_sheet(
        self,
        frame: pd.DataFrame,
        *,
        reviewer: str | None = None,
        sampled_col: str = "sampled_record",
        remove_col: str = "remove",
        add_col: str = "add",
    ) -> list[ReviewEvent]:
        """Import a filled-in review sheet (see :func:`~er_evaluation.review.parse_sheet`;
        :func:`~er_evaluation.review.read_sheet` reads a file with its rows numbered as a
        spreadsheet does) with the checks of the app: every row's sampled record is an
        item of the queue, every reviewer is one of the project's, the ids are those of
        the sample's version. Nothing is written unless every row is valid. A row on a
        record another reviewer decided differently is kept beside that decision, for
        adjudication; a row repeating its reviewer's own decision in this sample is not
        written again. Every row drops its reviewer's draft of the record, as a saved
        decision does: the row's decision is that reviewer's decision in force once
        imported, whether written or repeated. Returns the events written."""
        settings, queue = self._check_queue()
        if reviewer is not None:
            reviewer = self.reviewer(reviewer)
        rows = parse_sheet(
            frame,
            sampled_col=sampled_col,
            remove_col=remove_col,
            add_col=add_col,
            prediction=self.data.predictions[settings.version],
            reviewer=reviewer,
            reviewers=self.reviewers,
            items=queue["record_id"],
        )
        events = self.store.import_rows(rows, version=settings.version, after=self.after)
        self._supersede_drafts((who, valid.sampled_record) for valid, who, _ in rows)
        return events

    def _check_item(self, record: Any) -> None:
        queue = self._check_queue()[1]
        if not (queue["record_id"].map(_key) == _key(record)).any():
            raise ReviewError(f"{record!r} is not an item of the review queue")

    # ------------------------------------------------------------------ progress

    def history(self, record: Any) -> list[ReviewEvent]:
        """Every event on ``record``, in save order (those before the current sample
        included: see :attr:`after`)."""
        return self.store.history(record)

    def recent(self, reviewer: str, n: int = 5) -> list[ReviewEvent]:
        """``reviewer``'s latest ``n`` events that count for the sample, newest first."""
        reviewer = self.reviewer(reviewer)
        mine = [e for e in self._queue_events() if e.reviewer == reviewer]
        return mine[::-1][:n]

    def overview(self, reviewer: str | None = None, *, mine_only: bool = False) -> pd.DataFrame:
        """One row per queue item as ``reviewer`` sees it (with ``mine_only``, only the items
        assigned to them; every item of a queue shared by all), in queue order: ``item`` (1-based), ``record``, ``unit``,
        ``assigned`` (first and second reviewer), ``state`` (``to review``, ``reviewed``,
        ``covered`` — in a true cluster another decision gave —, ``disagreement``,
        ``adjudicated``, or for an item they review blind ``reviewed by you``), ``by`` and
        ``saved_at`` of the decision shown, and ``draft`` (an unsaved edit of theirs)."""
        queue = self._check_queue()[1]
        if reviewer is not None:
            reviewer = self.reviewer(reviewer)
            if mine_only and queue["reviewer"].notna().any():
                mine = (queue["reviewer"] == reviewer) | (queue["second_reviewer"] == reviewer)
                queue = queue[mine.to_numpy()]
        events = self._queue_events()
        force = {_key(e.sampled_record): e for e in current(events)}
        own = {}
        for e in effective(events):
            if e.role == "review" and e.reviewer == reviewer:
                own[_key(e.sampled_record)] = e
        truth = self.true_clusters()
        covered = set(map(_key, truth.index))
        open_items = set(map(_key, self.disagreements().table["sampled_record"]))
        drafts = set(map(_key, self.drafts.of(reviewer))) if reviewer else set()
        rows = []
        for item, row in enumerate(queue.itertuples(index=False), 1):  # one row per queue item
            key = _key(row.record_id)
            blind = (
                reviewer is not None
                and row.second_reviewer is not None
                and reviewer
                in (
                    row.reviewer,
                    row.second_reviewer,
                )
            )
            shown = own.get(key) if blind else force.get(key)
            if blind:
                state = "reviewed by you" if shown is not None else "to review"
            elif key in open_items:
                state = "disagreement"
            elif shown is not None:
                state = "adjudicated" if shown.role == "adjudication" else "reviewed"
            elif key in covered:
                state = "covered"
            else:
                state = "to review"
            assigned = ", ".join(
                str(r) for r in (row.reviewer, row.second_reviewer) if r is not None
            )
            rows.append(
                {
                    "item": item,
                    "record": row.record_id,
                    "unit": row.unit,
                    "assigned": assigned,
                    "state": state,
                    "by": None if shown is None else shown.reviewer,
                    "saved_at": None if shown is None else shown.created_at,
                    "draft": key in drafts,
                }
            )
        return pd.DataFrame(
            rows, columns=["item", "record", "unit", "assigned", "state", "by", "saved_at", "draft"]
        )

    def workload(self) -> pd.DataFrame:
        """Units and records assigned to each reviewer, as first and as second (blind)
        reviewer (see :func:`~er_evaluation.review.workload`)."""
        return workload(self._check_queue()[1])

    def status(self) -> dict[str, Any]:
        """The project at a glance, counts as integers: decisions and conflicts that
        count for the sample, the design, the queue, the finished units (and, where fewer,
        the distinct sampled clusters, the estimates' n_units), the reviewed
        records and the open disagreements, the records each reviewer decided and the
        adjudications; while a stratified or recommended sample cannot be estimated yet,
        why not."""
        decisions = self.store.decisions(after=self.after)
        rows: dict[str, Any] = {
            "folder": str(self.folder),
            "data": self.data.source,
            "reviewers": ", ".join(self.reviewers) or "none yet",
            "events": len(self.store.event_list(after=self.after)),
            "decisions": len(decisions),
            "conflicts": len(self.conflicts()),
        }
        settings = self.settings
        if self.queue is not None and settings is not None:
            from er_evaluation.review._design import DESIGNS

            waiting = None
            try:
                sample, finished = self.sample()
            except ReviewError as err:
                # a stratified or recommended sample before each stratum has a finished
                # review: the progress still shows, and why nothing is estimated yet
                finished = finished_units(self.queue, self.true_clusters())
                sample, waiting = None, str(err)
            doubled = double_reviewed(self.queue)
            rows |= {
                "design": DESIGNS[settings.design],
                "version": settings.version,
                "queue_records": len(self.queue),
                "queue_units": int(self.queue["unit"].nunique()),
                "double_reviewed_units": int(self.queue.loc[doubled, "unit"].nunique()),
                "finished_units": int(finished),
                # two draws of one true cluster are two finished units but one unit of
                # the estimates (their n_units): the count is given where it differs
                **(
                    {"distinct_sampled_clusters": int(sample.n_units)}
                    if sample is not None and sample.n_units != finished
                    else {}
                ),
                "reviewed_records": 0 if sample is None else int(sample.n_records),
                "open_disagreements": len(self.disagreements()),
                "decisions_before_this_sample": len(self.store.decisions()) - len(decisions)
                if settings.after_event
                else 0,
            }
            if waiting is not None:
                rows["not estimable yet"] = waiting
        own = self.store.own_decisions(after=self.after)
        for name, count in own["reviewer"].value_counts().sort_index().items():
            rows[f"records decided by {name}"] = int(count)
        rows["adjudications"] = int((decisions["role"] == "adjudication").sum())
        return rows


def _key(record: Any) -> str:
    """A record id as the store keys it (numpy integers and Python integers alike)."""
    return encode(plain_id(record))


def _source_of(config: Mapping) -> dict:
    if config.get("source", "demo") == "demo":
        return dict(DEMO_SOURCE)
    return {k: config[k] for k in _DATA_KEYS if k in config}


def next_to_review(done: np.ndarray, start: int) -> int:
    """The position (0-based) of the first item not done after ``start``, wrapping
    around; when every item is done, ``start`` kept inside the queue."""
    todo = np.flatnonzero(~np.asarray(done, dtype=bool))
    if len(todo) == 0:
        return min(max(start, 0), len(done) - 1)
    after = todo[todo > start]
    return int(after[0] if len(after) else todo[0])
