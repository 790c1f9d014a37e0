"""A resumable labelling session: a person (or an oracle) labels the pairs a sampler draws.

Storage: an append-only JSON-lines event log. The first line is a header (method, seed,
sampler parameters, pool size and fingerprint); every later line is one draw with its
pair ids, pool row, stratum, sampling probability, importance weight, answer, label,
whether it was answered by a person/oracle or from the label cache, and a timestamp.
Each line is written with one ``write`` + ``flush`` + ``os.fsync`` before ``answer``
returns, so an acknowledged label survives a crash. JSON lines rather than SQLite: the log
is one human-readable, diff-able, greppable file with no schema migrations, appends are
atomic enough at line granularity (a torn last line can only be an unacknowledged
write, which is detected and cut off on reopening with a warning), and the whole history
is kept (nothing is ever updated in place).

Resuming: the sampler is rebuilt from the header and the log is replayed draw by draw:
each logged draw must be exactly what the seeded sampler draws next (otherwise the pool
or the parameters changed and a clear error says so) and the logged labels are fed back
to the model. The RNG and model state after replay are therefore bit-identical to the
uninterrupted run.

Unsure answers: the draw is recorded in the log (answer "unsure", label null) but does not
count: it is not an estimate input, not cached, the model does not see it, and the next
call hands out a fresh draw. If the same pair comes up again the person is asked again.
Estimates are then those of the pool without the pairs one cannot decide; the number of
unsure answers is reported (:attr:`LabellingSession.n_unsure`) so this stays visible.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from er_evaluation.errors import plain_id
from er_evaluation.pairs.estimates import LabelRun, PairEstimates, estimate_from_labels
from er_evaluation.pairs.oracles import parse_answer
from er_evaluation.pairs.pool import PairPool
from er_evaluation.pairs.samplers import Draw, make_sampler

__all__ = ["LabellingSession", "PendingPair", "SessionError", "read_log"]

LOG_VERSION = 1


class SessionError(ValueError):
    """The label log does not belong to this pool / sampler, or is corrupt."""


@dataclass(frozen=True)
class PendingPair:
    """The pair waiting for an answer: pool row, ids, score and the draw behind it."""

    step: int
    index: int
    id_left: object
    id_right: object
    score: float
    predicted: int
    draw: Draw


def read_log(path: str | os.PathLike) -> tuple[dict, list[dict]]:
    """Header and events of a label log. A torn (unterminated) last line is reported with a
    warning and ignored; any other malformed line is an error naming its line number."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such label log: {path}")
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    torn = lines[-1] != b""
    if torn:
        warnings.warn(
            f"{path}: the last line was not completely written (crash during a write?); "
            "it was never acknowledged and is ignored",
            stacklevel=2,
        )
    lines = lines[:-1]
    records = []
    for number, line in enumerate(lines, start=1):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise SessionError(f"{path}, line {number}: not valid JSON ({error})") from None
    if not records or records[0].get("type") != "header":
        raise SessionError(f"{path}: the first line is not a label-log header")
    return records[0], records[1:]


class LabellingSession:
    """Hands out pairs to label, takes answers, logs them durably, resumes from the log.

    ``LabellingSession(pool, path, method="oasis", seed=0, **params)`` creates the log at
    ``path`` or, if it exists, resumes it (method, seed and parameters then come from the
    log; passing different ones is an error). ``next_pair()`` returns the pair to label
    (answering repeated pairs from the label cache on its own), ``answer(...)`` records
    match / non-match / unsure. ``run(oracle, budget)`` labels automatically.
    ``sync_every`` > 1 fsyncs only every that many events (for automatic oracles, whose
    labels are cheap to recompute); a person's answers are synced one by one.
    ``readonly=True`` replays an existing log without opening it for writing (estimates).
    """

    def __init__(
        self,
        pool: PairPool,
        path: str | os.PathLike,
        method: str | None = None,
        seed: int | None = None,
        *,
        sync_every: int = 1,
        readonly: bool = False,
        **params,
    ) -> None:
        self.pool = pool
        self.path = Path(path)
        self.sync_every = max(1, int(sync_every))
        self._cache = np.full(pool.n_pairs, -1, dtype=np.int8)
        self._index: list[int] = []
        self._label: list[int] = []
        self._weight: list[float] = []
        self._stratum: list[int] = []
        self._new: list[bool] = []
        self.n_unsure = 0
        self._n_labels = 0
        self._step = 0
        self._pending: PendingPair | None = None
        self._unsynced = 0
        self.readonly = readonly
        if self.path.exists() and self.path.stat().st_size > 0:
            self._resume(method, seed, params)
        elif readonly:
            raise FileNotFoundError(f"no such label log: {self.path}")
        else:
            self._create(method or "oasis", 0 if seed is None else int(seed), params)
        self._handle = None if readonly else open(self.path, "ab")  # noqa: SIM115

    # -- creation and replay -------------------------------------------------------
    def _create(self, method: str, seed: int, params: dict) -> None:
        self.sampler = make_sampler(method, self.pool, seed, **params)
        self.header = {
            "type": "header",
            "version": LOG_VERSION,
            "method": method,
            "seed": seed,
            "params": self.sampler.params(),
            "n_pairs": self.pool.n_pairs,
            "pool_fingerprint": self.pool.fingerprint(),
            "created": time.time(),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        with open(tmp, "wb") as handle:
            handle.write((json.dumps(self.header) + "\n").encode())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)

    def _resume(self, method: str | None, seed: int | None, params: dict) -> None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            header, events = read_log(self.path)
        if caught:
            warnings.warn(str(caught[0].message), stacklevel=3)
            if not self.readonly:
                self._truncate_torn_line()
        if header.get("version") != LOG_VERSION:
            raise SessionError(f"{self.path}: unsupported log version {header.get('version')}")
        if (
            header["n_pairs"] != self.pool.n_pairs
            or header["pool_fingerprint"] != self.pool.fingerprint()
        ):
            raise SessionError(
                f"{self.path} was written for another pool ({header['n_pairs']} pairs, "
                f"fingerprint {header['pool_fingerprint']}); this pool has {self.pool.n_pairs} "
                f"pairs, fingerprint {self.pool.fingerprint()}"
            )
        if method is not None and method != header["method"]:
            raise SessionError(f"{self.path} is a {header['method']!r} session, not {method!r}")
        if seed is not None and int(seed) != header["seed"]:
            raise SessionError(f"{self.path} was started with seed {header['seed']}, not {seed}")
        for key, value in params.items():
            if key in header["params"] and header["params"][key] != value:
                raise SessionError(
                    f"{self.path} was started with {key}={header['params'][key]!r}, not {value!r}"
                )
        self.header = header
        self.sampler = make_sampler(header["method"], self.pool, header["seed"], **header["params"])
        for line, event in enumerate(events, start=2):
            draw = self.sampler.draw()
            if draw is None or draw.index != event["pool_index"]:
                raise SessionError(
                    f"{self.path}, line {line}: logged pair {event['pool_index']} is not what the "
                    f"sampler draws on replay ({None if draw is None else draw.index}); the pool "
                    "or the sampler changed since the log was written"
                )
            self._step += 1
            if event["label"] is None:
                self.n_unsure += 1
                continue
            self._record(draw, int(event["label"]), event["source"] != "cache")

    def _truncate_torn_line(self) -> None:
        raw = self.path.read_bytes()
        keep = raw.rfind(b"\n") + 1
        with open(self.path, "rb+") as handle:
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())

    # -- labelling -------------------------------------------------------------------
    def _record(self, draw: Draw, label: int, new: bool) -> None:
        self._cache[draw.index] = label
        self._n_labels += int(new)
        self.sampler.observe(draw.index, label)
        self._index.append(draw.index)
        self._label.append(label)
        self._weight.append(draw.weight)
        self._stratum.append(draw.stratum)
        self._new.append(new)

    def _append(self, draw: Draw, answer: str, label: int | None, source: str) -> None:
        if self._handle is None:
            raise SessionError(f"{self.path} was opened read-only")
        pairs = self.pool.pairs
        event = {
            "type": "draw",
            "step": self._step,
            "pool_index": draw.index,
            "id_left": plain_id(pairs["id_left"].iat[draw.index]),
            "id_right": plain_id(pairs["id_right"].iat[draw.index]),
            "stratum": draw.stratum,
            "prob": draw.prob,
            "weight": draw.weight,
            "answer": answer,
            "label": label,
            "source": source,
            "n_labels": self.n_labels + (1 if source != "cache" and label is not None else 0),
            "time": time.time(),
        }
        self._handle.write((json.dumps(event) + "\n").encode())
        self._unsynced += 1
        if self._unsynced >= self.sync_every:
            self.flush()

    def flush(self) -> None:
        """Write buffered events to disk (fsync)."""
        if self._unsynced and self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._unsynced = 0

    def next_pair(self) -> PendingPair | None:
        """The next pair needing a label (repeats are answered from the cache and logged on
        the way), or None when the sampler is exhausted or every pair is labelled."""
        if self._pending is not None:
            return self._pending
        while self.n_labels < self.pool.n_pairs:
            draw = self.sampler.draw()
            if draw is None:
                return None
            cached = int(self._cache[draw.index])
            if cached >= 0:
                self._append(draw, "match" if cached else "non-match", cached, "cache")
                self._step += 1
                self._record(draw, cached, False)
                continue
            row = self.pool.pairs.iloc[draw.index]
            self._pending = PendingPair(
                self._step,
                draw.index,
                plain_id(row["id_left"]),
                plain_id(row["id_right"]),
                float(row["score"]),
                int(row["predicted"]),
                draw,
            )
            return self._pending
        return None

    def answer(self, answer, *, source: str = "person") -> None:
        """Record the answer to the pending pair: match (1/True), non-match (0/False) or
        unsure (None); see the module docstring for what unsure does."""
        if self._pending is None:
            raise SessionError("no pair is waiting for an answer; call next_pair() first")
        label = parse_answer(answer)
        draw = self._pending.draw
        word = {1: "match", 0: "non-match", None: "unsure"}[label]
        self._append(draw, word, label, source)
        self._pending = None
        self._step += 1
        if label is None:
            self.n_unsure += 1
            return
        self._record(draw, label, True)

    def run(self, oracle: Callable[[int], int | None], budget: int) -> int:
        """Label with ``oracle`` (pool index -> 1/0/None) until ``budget`` distinct pairs are
        labelled in total; returns the number of new labels."""
        start = self.n_labels
        while self.n_labels < budget:
            pending = self.next_pair()
            if pending is None:
                break
            self.answer(oracle(pending.index), source="oracle")
        self.flush()
        return self.n_labels - start

    # -- results -----------------------------------------------------------------------
    @property
    def n_labels(self) -> int:
        """Distinct pairs labelled so far (cache hits and unsure answers excluded)."""
        return self._n_labels

    @property
    def n_draws(self) -> int:
        """Counted draws so far (label-cache repeats included, unsure answers excluded)."""
        return len(self._index)

    def label_run(self, *, final_weights: bool = False) -> LabelRun:
        """The counted draws so far as a :class:`LabelRun` (for estimates and reuse)."""
        idx = np.asarray(self._index, dtype=np.int64)
        design = self.sampler.design
        strata = getattr(self.sampler, "strata", None)
        return LabelRun(
            design=design,
            pool_size=self.pool.n_pairs,
            index=idx,
            label=np.asarray(self._label, dtype=np.int8),
            weight=np.asarray(self._weight, dtype=np.float64),
            stratum=np.asarray(self._stratum, dtype=np.int64),
            new_label=np.asarray(self._new, dtype=bool),
            stratum_sizes=strata.sizes if design == "stratified" else None,
            final_weight=self.sampler.current_weights(idx)
            if final_weights and design == "importance"
            else None,
            method=self.sampler.name,
        )

    def estimate(
        self,
        *,
        alpha: float | Sequence[float] = 0.5,
        level: float = 0.95,
        interval: str = "normal",
    ) -> PairEstimates:
        """Precision, recall and F_alpha of the pool's prediction from the labels so far
        (see :func:`er_evaluation.pairs.estimate_from_labels`)."""
        return estimate_from_labels(
            self.label_run(), self.pool.predicted, alpha=alpha, level=level, interval=interval
        )

    def close(self) -> None:
        """Sync and close the log; the session can be reopened from it at any time."""
        if self._handle is not None and not self._handle.closed:
            self.flush()
            self._handle.close()

    def __enter__(self) -> LabellingSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
