"""A resumable labelling session: a person (or an oracle) labels the pairs a sampler draws.

Storage: an append-only JSON-lines event log. The first line is a header (method, seed,
sampler parameters, pool size and fingerprint); every later line is one draw with its
pair ids, pool row, stratum, sampling probability, importance weight, answer, label,
whether it was answered by a person/oracle or from the label cache, and a timestamp.
Every line carries a checksum of its content (``check``), so a line edited by hand is
named when the log is read (logs of version 1, written before the checksums, are read
without them).
Each line is written with one ``write`` + ``flush`` + ``os.fsync`` before ``answer``
returns, so an acknowledged label survives a crash. JSON lines rather than SQLite: the log
is one human-readable, diff-able, greppable file with no schema migrations, appends are
atomic enough at line granularity (a torn last line can only be an unacknowledged
write, which is detected and cut off on reopening with a warning), and the whole history
is kept (nothing is ever updated in place).

Several writers (two browser tabs, two reviewers, two processes on one log): every write
happens under an exclusive ``flock`` on the log, after replaying the lines the others
appended since this session last read it. Each session therefore continues from the
shared state; an answer to a pair another session already answered is not recorded (the
first answer stands; :meth:`LabellingSession.answer` returns False), so every answer is
recorded once and the log always replays. Logs written before this locking may hold the
same step twice; on replay the repeat is skipped with a warning.

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

import fcntl
import hashlib
import json
import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from er_evaluation._parameters import check_count, check_seed
from er_evaluation._progress import progress
from er_evaluation.errors import UndefinedMetricWarning, plain_id, warn
from er_evaluation.pairs.estimates import PairEstimates, estimate_from_labels
from er_evaluation.pairs.oracles import oracle_label, parse_answer
from er_evaluation.pairs.pool import PairPool
from er_evaluation.pairs.registry import make_sampler
from er_evaluation.pairs.run import LabelRun, run_of_sampler
from er_evaluation.pairs.samplers import Draw
from er_evaluation.pairs.stopping import IntervalWidths, check_target_width, interval_widths
from er_evaluation.vocabulary import pair_metric_names

__all__ = ["LabellingSession", "PendingPair", "SessionError", "read_log"]

LOG_VERSION = 2
"""Version of the label logs written: 2 adds a checksum to every line (version 1 logs,
without them, are still read)."""


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


_EVENT_FIELDS = {"step": int, "pool_index": int, "label": (int, type(None)), "source": str}
_HEADER_FIELDS = ("version", "method", "seed", "params", "n_pairs", "pool_fingerprint")


def _checksum(record: dict) -> str:
    """The checksum of a log line: the first 16 hex digits of the SHA-256 of its JSON
    without the ``check`` field (as written: json.dumps keeps the keys' order, and floats
    round-trip)."""
    body = {k: v for k, v in record.items() if k != "check"}
    return hashlib.sha256(json.dumps(body).encode()).hexdigest()[:16]


def _line(record: dict) -> bytes:
    """A log line: ``record`` with its checksum, newline-terminated."""
    return (json.dumps({**record, "check": _checksum(record)}) + "\n").encode()


def _parse_line(path: Path, number: int, line: bytes, *, checked: bool = True) -> dict:
    """One log line as a dict; a clear error naming the file, the line and what is wrong.
    ``checked``: the log's lines carry checksums (logs of version 2 on), so a line edited
    by hand is named."""
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise SessionError(f"{path}, line {number}: not valid JSON ({error})") from None
    if not isinstance(record, dict):
        raise SessionError(f"{path}, line {number}: not a JSON object")
    if number == 1:
        if record.get("type") != "header":
            raise SessionError(f"{path}, line 1: not a label-log header")
        for key in _HEADER_FIELDS:
            if key not in record:
                raise SessionError(f"{path}, line 1: the header has no {key!r} field")
        checked = isinstance(record["version"], int) and record["version"] >= 2
        _verify(path, number, record, checked)
        return record
    for key, kind in _EVENT_FIELDS.items():
        if key not in record:
            raise SessionError(f"{path}, line {number}: the draw has no {key!r} field")
        value = record[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise SessionError(f"{path}, line {number}: {key} is {value!r}")
    if record["label"] not in (0, 1, None):
        raise SessionError(f"{path}, line {number}: label is {record['label']!r}, not 0, 1 or null")
    _verify(path, number, record, checked)
    return record


def _verify(path: Path, number: int, record: dict, checked: bool) -> None:
    """A line whose checksum is missing or wrong (in a log whose lines carry them) is an
    error naming it: it was edited by hand or damaged after it was written."""
    if checked and record.get("check") != _checksum(record):
        problem = "has no checksum" if "check" not in record else "does not match its checksum"
        raise SessionError(
            f"{path}, line {number}: the line {problem}: it was edited or damaged after it "
            "was written"
        )


def _split_lines(raw: bytes) -> tuple[list[bytes], bool]:
    """Complete lines of ``raw`` and whether an unterminated (torn) last line follows."""
    lines = raw.split(b"\n")
    return lines[:-1], lines[-1] != b""


def read_log(path: str | os.PathLike) -> tuple[dict, list[dict]]:
    """Header and events of a label log. A torn (unterminated) last line is reported with a
    warning and ignored; any other unreadable line is an error naming its line number and
    what is wrong with it."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such label log: {path}")
    lines, torn = _split_lines(path.read_bytes())
    if torn:
        warn(
            f"{path}: the last line was not completely written (crash during a write?); "
            "it was never acknowledged and is ignored"
        )
    if not lines:
        raise SessionError(f"{path}: the log is empty (0 complete lines): it has no header line")
    header = _parse_line(path, 1, lines[0])
    checked = header["version"] >= 2
    records = [
        _parse_line(path, number, line, checked=checked)
        for number, line in enumerate(lines[1:], start=2)
    ]
    return header, records


def _target_of_alpha(alpha: float, target: str) -> dict:
    """``target`` and ``beta`` of a log written when the samplers took OASIS's weight
    alpha = 1 / (1 + beta^2) (1: precision, 0: recall): the beta whose weight is exactly
    the logged alpha, so the replayed draws are bit-identical."""
    if target != "f":  # a PR curve: the weight was not used
        return {"target": target}
    if alpha in (0, 1):
        return {"target": "recall" if alpha == 0 else "precision"}
    beta = math.sqrt((1.0 - alpha) / alpha)
    candidates = [beta]
    for direction in (math.inf, 0.0):
        b = beta
        for _ in range(64):
            b = math.nextafter(b, direction)
            candidates.append(b)
    exact = [b for b in candidates if 1.0 / (1.0 + b * b) == alpha]
    return {"target": "f", "beta": exact[0] if exact else beta}


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
        self.sync_every = check_count(sync_every, "sync_every")
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
        self._offset = 0  # bytes of the log replayed so far
        self._lines = 0  # complete lines replayed so far (header included)
        self._handle = None
        seed = check_seed(seed)  # before the log is opened: a bad seed leaves no file
        if readonly:
            if not self.path.exists():
                raise FileNotFoundError(f"no such label log: {self.path}")
            if self.path.stat().st_size == 0:
                raise SessionError(
                    f"{self.path}: the label log is empty (0 bytes): it has no header line; "
                    "start a session on it (not read-only) to create one"
                )
            self._resume(method, seed, params)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One append handle per session; every write happens under an exclusive lock on
        # it after catching up with lines other sessions appended (two tabs, two people).
        self._handle = open(self.path, "ab")  # noqa: SIM115
        try:
            with self._locked():
                if self._complete_size() == 0:
                    self._create(method or "oasis", 0 if seed is None else seed, params)
                else:
                    self._resume(method, seed, params)
        except BaseException:
            self._handle.close()
            raise

    @contextmanager
    def _locked(self):
        """Exclusive lock on the log (flock: per open file, so two sessions in one process
        exclude each other like two processes do)."""
        fcntl.flock(self._handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)

    def _complete_size(self) -> int:
        """Size of the log up to its last complete line. A torn last line (a crash during
        a write, never acknowledged; writes are serialised by the lock, so nothing else
        can leave one) is cut off with a warning unless the session is read-only."""
        size = os.path.getsize(self.path)
        if size == 0:
            return 0
        with open(self.path, "rb") as handle:
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return size
            handle.seek(0)
            keep = handle.read().rfind(b"\n") + 1
        warn(
            f"{self.path}: the last line was not completely written (crash during a "
            "write?); it was never acknowledged and is ignored"
        )
        if not self.readonly:
            with open(self.path, "rb+") as handle:
                handle.truncate(keep)
                handle.flush()
                os.fsync(handle.fileno())
        return keep

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
        line = _line(self.header)
        self._handle.write(line)
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._offset, self._lines = len(line), 1

    def _resume(self, method: str | None, seed: int | None, params: dict) -> None:
        size = self._complete_size()
        with open(self.path, "rb") as handle:
            raw = handle.read(size)
        lines, _ = _split_lines(raw)
        if not lines:
            raise SessionError(f"{self.path}: the log has no header line")
        header = _parse_line(self.path, 1, lines[0])
        if header["version"] not in (1, LOG_VERSION):
            raise SessionError(f"{self.path}: unsupported log version {header['version']!r}")
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
        if seed is not None and seed != header["seed"]:
            raise SessionError(f"{self.path} was started with seed {header['seed']}, not {seed}")
        for key, value in params.items():
            if key not in header["params"]:
                raise SessionError(
                    f"{self.path} is a {header['method']!r} session, which has no parameter "
                    f"{key!r}; its parameters: {', '.join(header['params']) or 'none'}"
                )
            if header["params"][key] != value:
                raise SessionError(
                    f"{self.path} was started with {key}={header['params'][key]!r}, not {value!r}"
                )
        self.header = header
        logged = dict(header["params"])
        if header["method"] == "oasis" and "decay" not in logged:
            logged["decay"] = False  # logs written before the Remark 4 decay existed
        if header["method"] == "oasis" and "n_bins" not in logged:
            logged["n_bins"] = None  # logs written before Freedman-Diaconis strata
        if header["method"] == "oasis":
            # logs written before strata were cut into chunks (and before that became the
            # default): their uncut strata, each with its own prior
            for key, old in (("max_share", None), ("doubling", False), ("shared_prior", False)):
                logged.setdefault(key, old)
        if header["method"] == "ais" and "prior" not in logged:
            # logs written before the AIS model options existed: the model they used
            logged.update(prior="scores", counts="labels", proposal="pair")
        if header["method"] == "ais" and "tree" not in logged:
            logged["tree"] = "score"  # logs written before the prediction-split tree
        if "alpha" in logged:
            logged.update(_target_of_alpha(logged.pop("alpha"), logged.get("target", "f")))
        self.sampler = make_sampler(header["method"], self.pool, header["seed"], **logged)
        self._offset, self._lines = len(lines[0]) + 1, 1
        self._replay(lines[1:], size)

    def _catch_up(self) -> None:
        """Replay the lines other sessions appended since this one last read the log."""
        size = self._complete_size()
        if size <= self._offset:
            return
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            raw = handle.read(size - self._offset)
        self._replay(_split_lines(raw)[0], size)

    def _replay(self, lines: list[bytes], end: int) -> None:
        """Feed logged draws to the sampler, checking each is what the seeded sampler draws
        next. A line repeating the previous step's pair (two writers answering the same
        pair, as logs written before locking could hold) is skipped with a warning: the
        first answer stands."""
        previous = None
        for line in lines:
            self._lines += 1
            number = self._lines
            event = _parse_line(self.path, number, line, checked=self.header["version"] >= 2)
            if previous is not None and (event["step"], event["pool_index"]) == previous:
                warn(
                    f"{self.path}, line {number}: a second answer to step {event['step']} "
                    f"(pair {event['pool_index']}) from another writer is ignored; the first "
                    "answer stands"
                )
                continue
            if event["step"] != self._step:
                raise SessionError(
                    f"{self.path}, line {number}: step {event['step']} where step {self._step} "
                    "was expected; the log was edited or written by an incompatible program"
                )
            if self._pending is not None:
                draw = self._pending.draw  # this session drew the same pair already
                self._pending = None
            else:
                draw = self.sampler.draw()
            if draw is None or draw.index != event["pool_index"]:
                raise SessionError(
                    f"{self.path}, line {number}: logged pair {event['pool_index']} is not what "
                    f"the sampler draws on replay ({None if draw is None else draw.index}); the "
                    "pool or the sampler changed since the log was written"
                )
            previous = (event["step"], event["pool_index"])
            self._step += 1
            if event["label"] is None:
                self.n_unsure += 1
                continue
            self._record(draw, int(event["label"]), event["source"] != "cache")
        self._offset = end

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
        line = _line(event)
        self._handle.write(line)
        # other sessions must see the line before the lock is released: flush, and fsync
        # every sync_every lines for durability
        self._handle.flush()
        self._offset += len(line)
        self._lines += 1
        self._unsynced += 1
        if self._unsynced >= self.sync_every:
            self.flush()

    def flush(self) -> None:
        """Write buffered events to disk (fsync)."""
        if self._unsynced and self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._unsynced = 0

    def next_pair(self, *, budget: int | None = None) -> PendingPair | None:
        """The next pair needing a label (repeats are answered from the cache and logged on
        the way), or None when the sampler is exhausted, every pair is labelled or, with
        ``budget``, that many pairs are labelled. Answers other sessions wrote to the same
        log are taken in first, so a session sharing its log stops at the budget like a
        lone one: nothing is drawn after the draw that paid for the budget's last label."""
        self._writable()
        if budget is not None:
            budget = check_count(budget, "budget", minimum=0)
        with self._locked():
            self._catch_up()
            if budget is not None and self.n_labels >= budget and self._pending is None:
                return None
            return self._advance()

    def _advance(self) -> PendingPair | None:
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

    def answer(self, answer, *, source: str = "person", index: int | None = None) -> bool:
        """Record the answer to the pending pair: match (1/True), non-match (0/False) or
        unsure (None); see the module docstring for what unsure does. ``index``: the pool
        row of the pair the person was shown (an interface that may have refreshed the
        pending pair in between should pass it).

        Several sessions may share one log (two browser tabs, two reviewers): answers are
        appended under an exclusive lock after taking in what the others wrote. If another
        session already answered this pair, the first answer stands, this one is not
        recorded and False is returned (``next_pair()`` then gives the next pair);
        otherwise True."""
        self._writable()
        if self._pending is None:
            raise SessionError("no pair is waiting for an answer; call next_pair() first")
        label = parse_answer(answer)
        shown = self._pending.index if index is None else int(index)
        with self._locked():
            self._catch_up()
            current = self._advance()
            if current is None or current.index != shown:
                return False
            draw = self._pending.draw
            word = {1: "match", 0: "non-match", None: "unsure"}[label]
            self._append(draw, word, label, source)
            self._pending = None
            self._step += 1
            if label is None:
                self.n_unsure += 1
            else:
                self._record(draw, label, True)
        return True

    def _writable(self) -> None:
        if self._handle is None or self._handle.closed:
            raise SessionError(f"{self.path} is open read-only or closed: no labelling")

    def run(
        self,
        oracle: Callable[[int], int | None],
        budget: int,
        *,
        target_width: float | None = None,
        beta: float | Sequence[float] = 1.0,
        level: float = 0.95,
    ) -> int:
        """Label with ``oracle`` (pool index -> 1/0/None) until ``budget`` distinct pairs are
        labelled in total, counting the labels other sessions on the log wrote meanwhile;
        returns the number of labels this call recorded. With ``target_width``, stop
        earlier, after the first label at which every interval (precision, recall, F_beta
        for ``beta`` at ``level``) is at most that wide (:meth:`widths`; the intervals are
        valid at a budget fixed in advance, :mod:`er_evaluation.pairs.stopping`)."""
        budget = check_count(budget, "budget", minimum=0)
        if target_width is not None:
            self.widths(target_width, beta=beta, level=level)  # the arguments, checked once
        recorded = 0
        bar = progress(desc="labelling", total=budget, initial=self.n_labels, unit="label")
        while self.n_labels < budget:
            if (
                target_width is not None
                and self.widths(target_width, beta=beta, level=level).reached
            ):
                break
            pending = self.next_pair(budget=budget)
            if pending is None:
                break
            label = oracle_label(oracle(pending.index), pending.index)
            recorded += int(self.answer(label, source="oracle") and label is not None)
            bar.update(self.n_labels - bar.n)  # labels other sessions wrote count too
        bar.close()
        self.flush()
        return recorded

    def widths(
        self,
        target_width: float | None = None,
        *,
        beta: float | Sequence[float] = 1.0,
        level: float = 0.95,
    ) -> IntervalWidths:
        """The live stopping signal: each metric's interval width after the labels so far
        and whether ``target_width`` is reached (:func:`~er_evaluation.pairs.stopping.interval_widths`;
        NaN widths, never reached, before a metric is defined)."""
        if not self._index:
            names = pair_metric_names(beta)
            return IntervalWidths(
                dict.fromkeys(names, math.nan), 0, check_target_width(target_width)
            )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            estimates = self.estimate(beta=beta, level=level)
        return interval_widths(estimates, target_width)

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
        return run_of_sampler(
            self.sampler,
            self.pool.n_pairs,
            self._index,
            self._label,
            self._weight,
            self._stratum,
            self._new,
            final_weights=final_weights,
        )

    def estimate(
        self,
        *,
        beta: float | Sequence[float] = 1.0,
        level: float = 0.95,
    ) -> PairEstimates:
        """Precision, recall and F_beta of the pool's prediction from the labels so far
        (see :func:`er_evaluation.pairs.estimate_from_labels`)."""
        return estimate_from_labels(self.label_run(), self.pool.predicted, beta=beta, level=level)

    def close(self) -> None:
        """Sync and close the log; the session can be reopened from it at any time."""
        if self._handle is not None and not self._handle.closed:
            self.flush()
            self._handle.close()

    def __enter__(self) -> LabellingSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
