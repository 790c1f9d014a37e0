"""Bounds of numeric parameters, checked where a public function receives them.

One function per kind of parameter, shared by sampling, estimators and pair sampling, so
that ``sample_clusters(c, 2.5)``, ``beta=-1``, a multiplicity of 1.7 or a bootstrap
interval from one replicate is an error naming the parameter and its value, never a
failure deep inside numpy or a silently wrong number.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy.special import ndtri  # scipy.stats would add ~1 s to every import

from er_evaluation.errors import examples

__all__ = [
    "check_choice",
    "check_count",
    "check_counts",
    "check_labels",
    "check_names",
    "check_real",
    "check_values",
    "check_flag",
    "check_level",
    "check_proportion",
    "check_seed",
    "z_value",
    "check_beta",
    "check_epsilon",
    "check_n_boot",
    "check_multiplicity",
    "min_n_boot",
    "BOOTSTRAP_METHODS",
]

# interval methods that resample (auto falls back to the studentized bootstrap for
# estimators that are not plain ratios)
BOOTSTRAP_METHODS = frozenset({"auto", "percentile", "studentized", "bca", "fieller_t"})


def _real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value


def check_count(value, name: str, minimum: int = 1) -> int:
    """``value`` as an int if it is a whole number >= ``minimum`` (``3`` or ``3.0``; not
    ``2.5``, ``True`` or ``"3"``), else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if isinstance(value, numbers.Integral):
        count = int(value)
    else:
        if not math.isfinite(value) or value != math.floor(value):
            raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
        count = int(value)
    if count < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return count


def check_real(
    value,
    name: str,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a float if it is a finite real number in the interval from ``low`` to
    ``high`` (each end closed unless ``low_open``/``high_open``; not ``True``, not
    ``"0.05"``), else a ValueError naming ``name``, the interval and the value."""
    interval = (
        f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        if math.isfinite(low) and math.isfinite(high)
        else (f"{'>' if low_open else '>='} {low:g}" if math.isfinite(low) else "")
        or (f"{'<' if high_open else '<='} {high:g}" if math.isfinite(high) else "")
    )
    wanted = (
        f"a number in {interval}"
        if interval.startswith(("(", "["))
        else f"a finite number {interval}".rstrip()
    )
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    number = float(value)
    inside = math.isfinite(number) and (
        (low < number if low_open else low <= number)
        and (number < high if high_open else number <= high)
    )
    if not inside:
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return number


def _key(label) -> str:
    return repr(label.item() if isinstance(label, np.generic) else label)


def _series(values, name: str, what: str) -> pd.Series:
    if not isinstance(values, pd.Series):
        raise ValueError(f"{name} must be a pandas Series ({what}), got {type(values).__name__}")
    if values.index.has_duplicates:
        raise ValueError(
            f"{name} names some entries twice: {examples(values.index[values.index.duplicated()])}"
        )
    return values


def check_counts(values, name: str, known: pd.Index | None = None, minimum: int = 0) -> pd.Series:
    """A Series of whole numbers >= ``minimum`` per stratum (e.g. fixed draws), as int64;
    else a ValueError naming the entry and its value (``n['a'] must be a whole number >=
    0, got -2``). With ``known``, every entry must name one of ``known``: an unknown
    stratum is an error, never dropped."""
    values = _series(values, name, "a count per stratum")
    if known is not None:
        check_names(values.index, name, known)
    for label, value in values.items():
        value = value.item() if isinstance(value, np.generic) else value
        check_count(value, f"{name}[{_key(label)}]", minimum)
    return values.astype(np.int64)


def check_values(
    values, name: str, known: pd.Index | None = None, *, positive: bool = False
) -> pd.Series:
    """A Series of finite real numbers >= 0 (> 0 with ``positive``) per stratum (e.g.
    standard deviations, costs), as float; else a ValueError naming the entry and its
    value. With ``known``, every entry must name one of ``known``."""
    values = _series(values, name, "a number per stratum")
    if known is not None:
        check_names(values.index, name, known)
    for label, value in values.items():
        value = value.item() if isinstance(value, np.generic) else value
        check_real(value, f"{name}[{_key(label)}]", 0.0, low_open=positive)
    return values.astype(float)


def check_names(values, name: str, known: pd.Index, *, what: str = "strata") -> list:
    """``values`` as a list if it is a collection (not one string) whose every entry is one
    of ``known``; else a ValueError naming the unknown entries and listing ``known``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ValueError(
            f"{name} must be a list of {what} names, got {values!r}"
            + (f" (write [{values!r}])" if isinstance(values, str) else "")
        )
    names = list(values)
    known = pd.Index(known)
    unknown = [v for v in names if not _among(v, known)]
    if unknown:
        raise ValueError(
            f"{name} names {what} that do not exist: {examples(unknown)}; "
            f"the {what} are {examples(known, 10)}"
        )
    return names


def _among(value, known: pd.Index) -> bool:
    try:
        found = value in known
    except TypeError:
        return False
    # 1 and "1" are different labels; so are True and 1
    return found and any(
        type(_plain(k)) is type(_plain(value)) or _numbers(k, value) for k in known[known == value]
    )


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _numbers(a, b) -> bool:
    a, b = _plain(a), _plain(b)
    return all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in (a, b))


def check_labels(labels, name: str, *, label: str = "stratum", what: str = "record") -> pd.Series:
    """A Series of labels (a stratum or group for every ``what`` of its index) with unique
    ids, no missing label and labels of one type (``1`` and ``"1"`` would be two strata, as
    they would be two clusters); else a ValueError naming the ids at fault."""
    labels = _series(labels, name, f"{what} id -> {label}")
    missing = labels.isna().to_numpy()
    if missing.any():
        raise ValueError(
            f"{name}: {int(missing.sum())} {what}(s) have no {label} (missing value): "
            f"{examples(labels.index[missing])}"
        )
    if labels.dtype == object:
        kind = pd.api.types.infer_dtype(labels, skipna=False)
        if kind in ("mixed-integer", "mixed-integer-float", "mixed"):
            types = pd.Series([type(_plain(v)).__name__ for v in labels.to_numpy()])
            counts = types.value_counts()
            minority = (types == counts.index[-1]).to_numpy()
            raise ValueError(
                f"{name}: {label} labels mix types "
                f"({', '.join(f'{t}: {c:,}' for t, c in counts.items())}), so 1 and '1' "
                f"would be two {label} labels; convert them to one type (e.g. all str). "
                f"{counts.index[-1]} at {what}(s) {examples(labels.index[minority])}"
            )
    return labels


def check_seed(seed, *, generator: bool = False):
    """``seed`` if it is None or a whole number >= 0 (and, with ``generator``, a
    :class:`numpy.random.Generator` to draw from), else a ValueError naming ``seed``:
    numpy's own messages ("expected non-negative integer", "SeedSequence expects int")
    do not say which argument was wrong."""
    if seed is None or (generator and isinstance(seed, np.random.Generator)):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        kinds = (
            "None, a whole number >= 0 or a numpy Generator"
            if generator
            else "None or a whole number >= 0"
        )
        raise ValueError(f"seed must be {kinds}, got {seed!r}")
    return int(seed)


def check_choice(value, name: str, choices):
    """``value`` if it is one of ``choices``, else a ValueError naming ``name`` and
    listing the choices (an unhashable value is refused the same way)."""
    choices = tuple(choices)
    try:
        known = value in choices
    except TypeError:
        known = False
    if not known or isinstance(value, bool) != any(isinstance(c, bool) for c in choices):
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {listed}; got {value!r}")
    return value


def check_flag(value, name: str) -> bool:
    """``value`` as a bool if it is True or False (numpy's too), else a ValueError naming
    ``name``: ``validate="no"`` would otherwise count as true."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_proportion(value, name: str) -> float:
    """A number in [0, 1] (e.g. an error rate), as a float; else a ValueError naming ``name``."""
    number = _real(value, name)
    if not 0 <= number <= 1:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return number


def check_level(level) -> float:
    """Confidence level strictly between 0 and 1 (e.g. 0.95)."""
    value = _real(level, "level")
    if not 0 < value < 1:
        raise ValueError(f"level must be in (0, 1), e.g. 0.95; got {level!r}")
    return value


def z_value(level) -> float:
    """The two-sided standard normal quantile z = Φ⁻¹(1/2 + level/2) of a confidence
    ``level`` in (0, 1), checked (1.959964 at 0.95): the one place every interval takes
    its normal quantile from."""
    return float(ndtri(0.5 + check_level(level) / 2))


def check_beta(beta) -> float:
    """The F-measure's weight beta, the one name of it across the package: a positive
    finite number (1 for F1; beta > 1 weighs recall more). F_beta = (1 + beta²) P R /
    (beta² P + R) (van Rijsbergen 1979)."""
    valid = isinstance(beta, numbers.Real) and not isinstance(beta, bool)
    if not valid or not 0 < float(beta) < math.inf:
        raise ValueError(f"beta must be a positive finite number (1 for F1), got {beta!r}")
    return float(beta)


def check_epsilon(epsilon) -> float:
    """Share of the instrumental distribution kept uniform: in (0, 1] so that every pair
    keeps a positive probability (the importance weights stay finite)."""
    value = _real(epsilon, "epsilon")
    if not 0 < value <= 1:
        raise ValueError(f"epsilon must be in (0, 1], got {epsilon!r}")
    return value


def min_n_boot(level: float) -> int:
    """Fewest bootstrap replicates accepted at ``level``: 100, and at least five replicates
    beyond each end of the interval, so its quantiles are not the extreme replicates
    (200 at level 0.95, 1,000 at 0.99)."""
    return max(100, math.ceil(10 / (1 - level) - 1e-9))


def check_n_boot(n_boot, method: str, level: float) -> int:
    """``n_boot`` as an int; for a bootstrap ``method`` at least :func:`min_n_boot`."""
    count = check_count(n_boot, "n_boot", minimum=1)
    if method in BOOTSTRAP_METHODS:
        needed = min_n_boot(level)
        if count < needed:
            raise ValueError(
                f"ci_method={method!r} at level {level:g} needs n_boot >= {needed:,} bootstrap "
                f"replicates (five beyond each end of the interval), got {n_boot!r}"
            )
    return count


def check_multiplicity(values, units) -> np.ndarray:
    """With-replacement multiplicities as int64: whole numbers >= 1 (a unit drawn twice
    counts twice; 1.7 draws is an error naming the units, never truncated to 1)."""
    array = np.asarray(values)
    if array.dtype.kind == "b" or array.dtype.kind not in "iuf":
        raise ValueError(f"multiplicity must hold whole numbers >= 1, got dtype {array.dtype}")
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(array) | (array < 1) | (array != np.floor(array))
    if bad.any():
        raise ValueError(
            f"multiplicity must be a whole number >= 1 (draws of a unit); {int(bad.sum())} "
            f"unit(s) are not: {examples(np.asarray(units)[bad])} with "
            f"{examples(array[bad])}"
        )
    return array.astype(np.int64)
