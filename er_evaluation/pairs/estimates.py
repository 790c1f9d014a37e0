"""Precision, recall and F_alpha with standard errors from one labelled pair sample.

All metrics are ratios of weighted sums over the draws j = 1..T, with a_j = l_j lhat_j
(true positive), and denominators b_j = alpha lhat_j + (1 - alpha) l_j (alpha = 1:
precision, alpha = 0: recall, alpha = 1/2: F1; F_beta has alpha = 1/(1 + beta^2)):

    F_alpha = sum_j w_j a_j / sum_j w_j b_j            (Marchant & Rubinstein 2017, Algorithm 3, line 11)

Standard errors come from the linearisation of the ratio (delta method), i.e. Marchant & Rubinstein 2021
§3.3.2 with g(R) = R_1 / (alpha R_2 + (1 - alpha) R_3); the term D_g(R) R vanishes at
the ratio estimate, leaving

    Var(F) ~= sum_j w_j u_j (a_j - F b_j)^2 / (sum_j w_j b_j)^2,

where u_j is p/q of draw j under the proposal Marchant & Rubinstein 2021 plugs in. ``variance="martingale"``
(default) uses each draw's own proposal, u_j = w_j: the unbiased estimate of the average
conditional variance that the martingale CLT (Marchant & Rubinstein 2021, Theorem 2) uses at finite T.
``variance="final"`` uses the latest proposal q_N as in Marchant & Rubinstein 2021 §3.3.2 (needs
``run.final_weight``). Passive samples use the usual ratio variance with finite-population
correction (1 - n/N) s_e^2 / (n bbar^2); stratified samples the stratified ratio variance
sum_k N_k^2 (1 - n_k/N_k) s_{k,e}^2 / n_k / B^2.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtri  # scipy.stats would add ~1 s to every import

from er_evaluation._parameters import check_level
from er_evaluation.errors import UndefinedMetricWarning
from er_evaluation.vocabulary import fscore_name

__all__ = [
    "LabelRun",
    "PairEstimate",
    "PairEstimates",
    "estimate_from_labels",
    "f_alpha_name",
    "history",
    "metric_names",
]


@dataclass(frozen=True)
class LabelRun:
    """The labelled draws of one sampling run, in draw order (repeats included).

    ``index``: pool row of each draw; ``label``: its true 0/1 label; ``weight``: p/q of the
    draw (importance design) or 1; ``stratum``: stratum code (stratified design) or -1;
    ``new_label``: True where the draw cost a new label (False: label cache hit);
    ``design``: "passive" | "stratified" | "importance"; ``pool_size`` = N;
    ``stratum_sizes``: N_k (stratified design); ``final_weight``: p/q_N of each draw under the
    sampler's final proposal (optional, for ``variance="final"``).
    """

    design: str
    pool_size: int
    index: np.ndarray
    label: np.ndarray
    weight: np.ndarray
    stratum: np.ndarray
    new_label: np.ndarray
    stratum_sizes: np.ndarray | None = None
    final_weight: np.ndarray | None = None
    method: str = ""

    @property
    def n_draws(self) -> int:
        """Number of draws T (repeats included)."""
        return len(self.index)

    @property
    def n_labels(self) -> int:
        """Number of distinct labels paid for."""
        return int(np.sum(self.new_label))


@dataclass(frozen=True)
class PairEstimate:
    """One metric estimated from a pair sample: value, standard error, normal CI at
    ``level`` (clipped to [0, 1]), distinct labelled pairs ``n_labels`` and draws ``n_draws``."""

    metric: str
    value: float
    std_error: float
    ci_low: float
    ci_high: float
    level: float
    n_labels: int
    n_draws: int
    design: str

    def __repr__(self) -> str:
        return (
            f"<PairEstimate {self.metric} = {self.value:.4f} (SE {self.std_error:.4f}, "
            f"{self.level:.0%} CI [{self.ci_low:.4f}, {self.ci_high:.4f}]); "
            f"{self.n_labels} labels, {self.n_draws} draws, {self.design}>"
        )


@dataclass(frozen=True)
class PairEstimates:
    """Precision, recall and F_alpha for each requested alpha, all from the same run."""

    precision: PairEstimate
    recall: PairEstimate
    f: tuple[PairEstimate, ...]

    def to_frame(self) -> pd.DataFrame:
        """One row per metric: value, std_error, ci_low, ci_high, level, n_labels, n_draws."""
        rows = [self.precision, self.recall, *self.f]
        frame = pd.DataFrame(
            [
                {
                    "value": e.value,
                    "std_error": e.std_error,
                    "ci_low": e.ci_low,
                    "ci_high": e.ci_high,
                    "level": e.level,
                    "n_labels": e.n_labels,
                    "n_draws": e.n_draws,
                }
                for e in rows
            ],
            index=pd.Index([e.metric for e in rows], name="metric"),
        )
        return frame


def f_alpha_name(alpha: float) -> str:
    """Vocabulary name of F_alpha = 1 / (alpha/P + (1 - alpha)/R): the F_beta with
    beta = sqrt((1 - alpha)/alpha), named by :func:`~er_evaluation.vocabulary.fscore_name`
    ("pairwise_f1" for alpha = 1/2, "pairwise_f2" for alpha = 0.2)."""
    _check_alpha(alpha)
    return fscore_name("pairwise", math.sqrt((1 - alpha) / alpha))


def metric_names(alphas: Sequence[float]) -> list[str]:
    """ "pairwise_precision", "pairwise_recall", then :func:`f_alpha_name` of each alpha."""
    return ["pairwise_precision", "pairwise_recall"] + [f_alpha_name(a) for a in alphas]


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(
            f"alpha must be strictly between 0 and 1 (alpha = 1 is precision and 0 is recall, "
            f"which are always reported), got {alpha}"
        )


def _alphas(alpha: float | Sequence[float]) -> list[float]:
    values = [float(alpha)] if np.isscalar(alpha) else [float(a) for a in alpha]
    for a in values:
        _check_alpha(a)
    return values


def _predicted_of(run: LabelRun, predicted) -> np.ndarray:
    predicted = np.asarray(predicted)
    if predicted.shape != (run.pool_size,):
        raise ValueError(
            f"predicted must hold one 0/1 value per pool pair ({run.pool_size}), got shape {predicted.shape}"
        )
    return predicted[run.index].astype(np.float64)


def _history_arrays(run: LabelRun, predicted, alphas: list[float], variance: str):
    """value[T, M] and std_error[T, M] after each draw for M = 2 + len(alphas) metrics."""
    lh = _predicted_of(run, predicted)
    lab = run.label.astype(np.float64)
    a = lab * lh
    coef = np.array([1.0, 0.0, *alphas])  # alpha per metric
    T = run.n_draws
    with np.errstate(invalid="ignore", divide="ignore"):
        if run.design == "stratified":
            return _stratified_history(run, a, lh, lab, coef)
        if run.design == "passive":
            w = np.ones(T)
            u = w
        elif run.design == "importance":
            w = run.weight.astype(np.float64)
            if variance == "final":
                if run.final_weight is None:
                    raise ValueError("variance='final' needs run.final_weight (p/q_N per draw)")
                u = run.final_weight
            elif variance == "martingale":
                u = w
            else:
                raise ValueError(f"variance must be 'martingale' or 'final', got {variance!r}")
        else:
            raise ValueError(f"unknown design {run.design!r}")
        s_a, s_h, s_l = (np.cumsum(w * x) for x in (a, lh, lab))
        den = coef[None, :] * s_h[:, None] + (1 - coef[None, :]) * s_l[:, None]
        value = s_a[:, None] / den
        wu = w * u
        q_a, q_h, q_l = (np.cumsum(wu * x) for x in (a, lh, lab))
        # sum wu (a - F b)^2 with a^2 = a, a b = a, b^2 = al^2 lh + (1-al)^2 l + 2 al (1-al) a
        q_bb = (
            coef**2 * q_h[:, None]
            + (1 - coef) ** 2 * q_l[:, None]
            + 2 * coef * (1 - coef) * q_a[:, None]
        )
        sq = q_a[:, None] - 2 * value * q_a[:, None] + value**2 * q_bb
        sq = np.maximum(sq, 0.0)
        var = sq / den**2
        if run.design == "passive":
            n = np.arange(1, T + 1, dtype=np.float64)[:, None]
            fpc = 1.0 - n / run.pool_size
            var = np.where(n > 1, var * n / (n - 1) * fpc, np.nan)
        return value, np.sqrt(var)


def _stratified_history(run: LabelRun, a, lh, lab, coef):
    sizes = np.asarray(run.stratum_sizes, dtype=np.float64)
    K, T = len(sizes), run.n_draws
    onehot = np.zeros((T, K))
    onehot[np.arange(T), run.stratum] = 1.0
    n = np.cumsum(onehot, axis=0)
    c_a, c_h, c_l = (np.cumsum(onehot * x[:, None], axis=0) for x in (a, lh, lab))
    safe_n = np.where(n > 0, n, 1.0)
    scale = np.where(n > 0, sizes / safe_n, 0.0)  # N_k / n_k, 0 for unsampled strata
    tot_a, tot_h, tot_l = ((scale * c).sum(axis=1) for c in (c_a, c_h, c_l))
    den = coef * tot_h[:, None] + (1 - coef) * tot_l[:, None]
    value = tot_a[:, None] / den
    var = np.zeros_like(value)
    fpc = 1.0 - n / sizes
    for m, al in enumerate(coef):
        f = value[:, m][:, None]
        c_b = al * c_h + (1 - al) * c_l
        c_bb = al**2 * c_h + (1 - al) ** 2 * c_l + 2 * al * (1 - al) * c_a
        sum_e = c_a - f * c_b
        sum_e2 = c_a - 2 * f * c_a + f**2 * c_bb
        s2 = np.where(n > 1, (sum_e2 - sum_e**2 / safe_n) / np.where(n > 1, n - 1, 1.0), 0.0)
        s2 = np.maximum(s2, 0.0)
        var[:, m] = np.sum(np.where(n > 0, sizes**2 * fpc * s2 / safe_n, 0.0), axis=1)
    var = var / den**2
    return value, np.sqrt(var)


def _interval(value: float, se: float, z: float, kind: str) -> tuple[float, float]:
    if math.isnan(se):
        return math.nan, math.nan
    if kind == "logit" and 0.0 < value < 1.0:
        centre = math.log(value / (1 - value))
        half = z * se / (value * (1 - value))
        return 1 / (1 + math.exp(-(centre - half))), 1 / (1 + math.exp(-(centre + half)))
    return max(0.0, value - z * se), min(1.0, value + z * se)


def history(run: LabelRun, predicted, *, alpha: float | Sequence[float] = 0.5) -> pd.DataFrame:
    """Estimates after every draw: columns ``n_draws``, ``n_labels`` and, per metric
    (see :func:`metric_names`), the value and ``<metric>_se``. NaN where undefined."""
    alphas = _alphas(alpha)
    value, se = _history_arrays(run, predicted, alphas, "martingale")
    names = metric_names(alphas)
    data = {
        "n_draws": np.arange(1, run.n_draws + 1),
        "n_labels": np.cumsum(run.new_label).astype(np.int64),
    }
    for m, name in enumerate(names):
        data[name] = value[:, m]
        data[f"{name}_se"] = se[:, m]
    return pd.DataFrame(data)


def estimate_from_labels(
    run: LabelRun,
    predicted,
    *,
    alpha: float | Sequence[float] = 0.5,
    level: float = 0.95,
    variance: str = "martingale",
    interval: str = "normal",
) -> PairEstimates:
    """Pairwise precision, recall and F_alpha (for every alpha given; named as
    :func:`metric_names`) of ``predicted`` (0/1 per pool pair) from the labelled draws of
    ``run``, each with its standard error and normal
    ``level`` CI. Any 0/1 prediction over the same pool can be evaluated (label reuse:
    :mod:`er_evaluation.pairs.reuse`). Undefined ratios (no sampled predicted or true
    matches) give NaN with an :class:`UndefinedMetricWarning`.

    ``interval="normal"``: value +- z SE, clipped to [0, 1]. ``interval="logit"``: the
    normal interval on the logit scale, expit(logit(v) +- z SE / (v (1 - v))) (delta
    method), which is asymmetric and stays inside (0, 1); it covers better when rare
    matches make the estimate skewed (benchmarks/README.md, FEBRL). Estimates of exactly
    0 or 1 fall back to the normal interval.
    """
    if interval not in ("normal", "logit"):
        raise ValueError(f"interval must be 'normal' or 'logit', got {interval!r}")
    alphas = _alphas(alpha)
    if run.n_draws == 0:
        raise ValueError("the run has no labelled draws: nothing to estimate")
    value, se = _history_arrays(run, predicted, alphas, variance)
    z = ndtri(0.5 + check_level(level) / 2)
    out = []
    for m, name in enumerate(metric_names(alphas)):
        v, s = float(value[-1, m]), float(se[-1, m])
        if math.isnan(v):
            warnings.warn(
                f"{name} is undefined on this sample (no sampled pair in its denominator); NaN returned",
                UndefinedMetricWarning,
                stacklevel=2,
            )
            s = math.nan
        low, high = _interval(v, s, z, interval)
        out.append(
            PairEstimate(name, v, s, low, high, level, run.n_labels, run.n_draws, run.design)
        )
    return PairEstimates(out[0], out[1], tuple(out[2:]))
