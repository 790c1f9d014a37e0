"""Measurement scaffolding shared by bench_kernel.py and bench_engines.py (and, for the
memory probe, tests/test_memory.py): one child process per configuration with its exit
status, output and peak resident memory; CPU time and peak memory of any process from
/proc; raised CPU priority on a shared machine; the machine's description; the best
wall and CPU time of repeated calls (bench_breakdown.py, bench_estimators.py).

Only the standard library: the benchmarks import it before numpy or any engine.
"""

from __future__ import annotations

import gc
import os
import platform
import subprocess
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ChildRun:
    """A finished child process: exit code (negative: killed by that signal), its standard
    output and error, and its peak resident memory in MB (``ru_maxrss`` from ``wait4``)."""

    returncode: int
    out: str
    err: str
    peak_mb: float

    def last_error(self) -> str:
        """The last line of the child's standard error (or its exit code)."""
        return (self.err.strip().splitlines() or [f"exit {self.returncode}"])[-1]


def run_child(command: Sequence[str], preexec_fn: Callable[[], None] | None = None) -> ChildRun:
    """Run ``command`` to its end. Standard error goes to a temporary file, so that a
    child writing much to it cannot block on a full pipe while we read its output."""
    with tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            list(command), stdout=subprocess.PIPE, stderr=err, text=True, preexec_fn=preexec_fn
        )
        out = process.stdout.read()
        process.stdout.close()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return ChildRun(process.returncode, out, err.read(), usage.ru_maxrss / 1024)


def best_of(fn: Callable[[], object], repeats: int = 3) -> tuple[float, float]:
    """Best wall time and best CPU time (process time: what the call itself costs on a
    shared machine) over ``repeats`` runs after a warm-up."""
    fn()  # warm-up (imports, caches of the first call)
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu)


def rss_mb(field: str = "VmRSS", pid: int | str = "self") -> float:
    """A memory field of /proc/<pid>/status in MB: ``VmRSS`` (resident now) or ``VmHWM``
    (peak resident since start or since :func:`reset_peak_rss`)."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak_rss() -> None:
    """Make this process's ``VmHWM`` restart from its current RSS (Linux >= 4.0)."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def process_cpu(pid: int | str = "self") -> float:
    """User + system CPU seconds of process ``pid`` (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def add_run_options(parser, nice: int) -> None:
    """``--boost`` (run at raised CPU priority: :func:`raise_priority` with ``nice``, applied
    by :func:`parse_run_options`) and ``--out`` (the folder of the JSON results, default
    benchmarks/_out), the options every timing benchmark has."""
    parser.add_argument(
        "--boost",
        action="store_true",
        help="run at raised CPU priority (root): a new session whose scheduler group gets "
        f"nice {nice}, so other users' jobs change the timings less",
    )
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "_out"))
    parser.set_defaults(boost_nice=nice)


def parse_run_options(parser):
    """``parser.parse_args()``, with the priority of ``--boost`` raised at once (children
    started later inherit it)."""
    args = parser.parse_args()
    if args.boost:
        raise_priority(args.boost_nice)
    return args


def raise_priority(nice: int = -15) -> None:
    """Start a new session and give its scheduler group the given nice value. With
    autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``) a process's nice
    value only ranks it inside its own session's group, so ``nice -n -15`` alone does not
    take CPU from other sessions' jobs; the group's own nice (``/proc/self/autogroup``)
    does. Children inherit both. Needs root."""
    if os.getsid(0) != os.getpid():  # not yet the leader of a session of its own
        os.setsid()
    try:
        if os.path.exists("/proc/self/autogroup"):
            with open("/proc/self/autogroup", "w") as handle:
                handle.write(str(nice))
        os.nice(nice - os.nice(0))
    except PermissionError as error:
        raise SystemExit(f"--boost needs root (raising CPU priority): {error}") from error


@dataclass(frozen=True)
class Traced:
    """What one call allocated (tracemalloc: numpy arrays and pandas hash tables, not
    Arrow's own buffers): ``peak`` bytes on top of what existed before, ``held`` bytes
    still allocated once its result is deleted, and ``new_caches``, the keys it added to
    the ``_cache`` of the given pandas indexes."""

    peak: int
    held: int
    new_caches: tuple[str, ...]


def traced(call: Callable[[], object], indexes: Sequence = ()) -> Traced:
    """Run ``call()`` once under tracemalloc (see :class:`Traced`)."""
    before = [set(index._cache) for index in indexes]
    gc.collect()
    tracemalloc.start()
    result = call()
    _, peak = tracemalloc.get_traced_memory()
    del result
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    added = {
        k for index, keys in zip(indexes, before, strict=True) for k in set(index._cache) - keys
    }
    return Traced(peak, held, tuple(sorted(added)))


def machine() -> str:
    """Cores, CPU model, memory, Python version and the current 1-minute load average."""
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as handle:
        mem_gb = int(handle.readline().split()[1]) / 1024**2
    load = os.getloadavg()
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem_gb:.0f} GB RAM, Python {platform.python_version()}, "
        f"load average before the run {load[0]:.1f}"
    )
