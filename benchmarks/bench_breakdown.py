"""Coverage and speed of the breakdowns from one reviewed sample: recall lost to blocking
(``blocking_recall``, ``matching_recall``), precision / recall / F1 per subgroup of
records (with the paired differences between two versions and the test of equality
across groups), and summary statistics of the true clustering.

Grid (per truth): truths RLdata10000 identities, PatentsView 2022-06-30 (133,541
mentions) and a heavy-tailed clustering (Zipf(2) sizes capped at 5,000, 200,000
records); error mechanisms of :data:`er_evaluation.simulation.ERROR_MECHANISMS`
(misattributed records, over-merged entities, split entities) at 10%, the second version
of a paired difference the same errors with half of them fixed (``keep=0.5``); n = 100 /
400 records sampled uniformly with replacement, their true clusters reviewed.

- Blocking keys: every true cluster in a block of ~10 entities, then a share
  ``1 - sqrt(1 - L)`` of the records moved to a random block, which loses about L of the
  true links: ``light`` (L = 5%), ``heavy`` (L = 30%), ``two-pass`` (two such passes at
  30%, a pair compared when it agrees on either: ~9% lost); on RLdata also the birth year
  (15.8% lost).
- Groups: every entity in group A, B or C with probability 0.6 / 0.3 / 0.1, then 3% of the
  records of entities of two or more moved to another group (links across groups).
  Scenario ``different``: the error mechanism at 5% / 10% / 20% in A / B / C;
  ``same``: 10% everywhere.
- Truth statistics: the same samples of each truth (names: RLdata's first and last
  names, PatentsView's mentions; none for the synthetic truth).

Each estimate is the library's own smooth function and columns (the per-unit totals of
a census of each truth, indexed by each replicate's draws); values, standard errors, the
default ``score`` interval and the ``reliable`` rule (for groups and the links across
groups, with each row's hosts' view and unreached large predicted clusters:
:func:`group_views`) are computed for
all replicates at once with the library's vectorised functions (``bias_corrected``, ``score_bounds``,
``effective_units``), and the first replicate of every cell is checked against the public
functions (``blocking_table``, ``estimate_by_group``, ``compare_by_group``,
``group_equality_test``, ``estimate_summary``). The equality test's size is the
rejection rate at 5% of its statistic centred at the true differences (the test as if
H0 held, under the actual sampling distribution); its power is its rejection rate in the
``different`` scenario.

    nice -n 10 python benchmarks/bench_breakdown.py --replicates 400
    python benchmarks/bench_breakdown.py --report      # the Markdown tables, from the CSVs
    nice -n 10 python benchmarks/bench_breakdown.py --speed
    python benchmarks/bench_breakdown.py --smoke       # RLdata, 20 replicates (CI)
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from _timing import best_of
from scipy.special import chdtri

from er_evaluation._contingency_table import comb2
from er_evaluation.datasets import (
    load_patentsview_benchmark,
    load_patentsview_mentions,
    load_patentsview_predictions,
    load_rldata10000,
)
from er_evaluation.estimators import (
    blocking_metrics,
    blocking_table,
    compare_by_group,
    estimate_by_group,
    estimate_summary,
    group_equality_test,
    group_metrics,
)
from er_evaluation.estimators._metric_fit import metric_function
from er_evaluation.estimators.blocking import (
    _RATIOS,
    _blocked_units,
    _reviewed_codes,
    blocked_link_counts,
)
from er_evaluation.estimators.diagnostics import MIN_EFFECTIVE_UNITS, bounded_estimator
from er_evaluation.estimators.groups import (
    ACROSS,
    UNREVIEWED_CLUSTERS,
    UNREVIEWED_CLUSTERS_ACROSS,
    UNREVIEWED_SHARE,
    effective_units,
    equality_p_value,
    equality_statistic,
    group_unit_tables,
)
from er_evaluation.estimators.intervals import MIN_EVENTS, score_bounds
from er_evaluation.estimators.ratio import FBeta, Linear, Ratio, bias_corrected
from er_evaluation.estimators.truth import SUMMARY_RATIOS, summary_units
from er_evaluation.sampling import Sample, benchmark_sample
from er_evaluation.simulation import ERROR_MECHANISMS, zipf_clustering
from er_evaluation.summary import join_names, summary_statistics

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
LEVEL = 0.95
RATE = 0.10
GROUP_RATES = {"different": (0.05, 0.10, 0.20), "same": (0.10, 0.10, 0.10)}
GROUP_SHARES = (0.6, 0.3, 0.1)
GROUPS = ("A", "B", "C")
GROUP_METRICS = ("pairwise_precision", "pairwise_recall", "pairwise_f1")
KEY_LOSSES = {"light": (0.05,), "heavy": (0.30,), "two-pass": (0.30, 0.30)}


def load_truth(name: str) -> tuple[pd.Series, pd.Series | None]:
    """The truth and the names of its records (None for the synthetic truth)."""
    if name == "rldata10000":
        records, truth = load_rldata10000()
        return truth, join_names(records, ["fname_c1", "lname_c1"])
    if name == "patentsview":
        truth = load_patentsview_predictions(["2022-06-30"])["2022-06-30"]
        mentions = load_patentsview_mentions()
        return truth, join_names(mentions, ["name_first", "name_last"]).reindex(truth.index)
    if name == "heavy":
        return zipf_clustering(200_000, 2.0, max_size=5000, seed=0), None
    raise ValueError(f"unknown truth {name!r}; choose rldata10000, patentsview or heavy")


def block_keys(truth: pd.Series, losses, seed) -> pd.DataFrame:
    """One key column per pass: entities in blocks of ~10, then a share 1 - sqrt(1 - L)
    of the records moved to a random block (about L of the true links lost)."""
    rng = np.random.default_rng(seed)
    code, _ = pd.factorize(truth.to_numpy())
    n_blocks = max(code.max() // 10 + 1, 2)
    columns = {}
    for j, loss in enumerate(losses):
        block = rng.permutation(code.max() + 1)[code] // 10
        moved = rng.random(len(code)) < 1 - math.sqrt(1 - loss)
        block[moved] = rng.integers(0, n_blocks, int(moved.sum()))
        columns[f"pass{j + 1}"] = block
    return pd.DataFrame(columns, index=truth.index)


def make_groups(truth: pd.Series, seed) -> pd.Series:
    """Entities in groups A/B/C (shares 0.6/0.3/0.1); 3% of the records of entities of two
    or more moved to another group."""
    rng = np.random.default_rng(seed)
    code, _ = pd.factorize(truth.to_numpy())
    group = rng.choice(3, size=code.max() + 1, p=GROUP_SHARES)[code]
    size = np.bincount(code)[code]
    moved = (size >= 2) & (rng.random(len(code)) < 0.03)
    group[moved] = (group[moved] + rng.integers(1, 3, int(moved.sum()))) % 3
    return pd.Series(np.asarray(GROUPS, dtype=object)[group], index=truth.index)


def grouped_prediction(truth, groups, mechanism, rates, keep, seed) -> pd.Series:
    """The error mechanism at each group's rate, each record taking its group's run."""
    out = truth.copy()
    for g, rate, s in zip(GROUPS, rates, np.random.SeedSequence(seed).spawn(3), strict=True):
        run = ERROR_MECHANISMS[mechanism](truth, rate, keep=keep, seed=np.random.default_rng(s))
        inside = (groups == g).to_numpy()
        out[inside] = run[inside]
    return out


def replicates(
    phi, cols: dict, draws: np.ndarray, bounds, paired=False, hosts=None, unreviewed=None
) -> dict:
    """Value, SE, default interval and the library's reliable rule for every replicate
    (rows of ``draws``: positions of the drawn units in the census); ``hosts``: the
    per-replicate hosts' view of a group (:func:`group_views`), keyed by column prefix;
    ``unreviewed``: per replicate, whether the group's large predicted clusters no
    reviewed record reaches flag it (:func:`group_views`; in either version)."""
    names = phi.columns()
    index = {c: i for i, c in enumerate(names)}
    Y = np.stack([np.asarray(cols[c], dtype=float)[draws] for c in names], axis=-1)
    n = Y.shape[1]
    mean = Y.mean(axis=1)
    dev = Y - mean[:, None, :]
    cov = np.einsum("rni,rnj->rij", dev, dev) / (n - 1)
    census = np.stack([np.asarray(cols[c], dtype=float) for c in names], axis=-1)
    bounded = bounded_estimator(phi, census, index)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = bias_corrected(phi, mean, cov, 1.0, n, index)
        _, g, _ = phi.evaluate(mean, index)
        se = np.sqrt(np.clip(np.einsum("ri,rij,rj->r", g, cov, g) / n, 0, None))
        n_events = effective_units(Y, phi, names)
        lo, hi = score_bounds(
            phi, mean, cov, 1.0, n, index, LEVEL, bounds, bounded=bounded, draws=(Y, None)
        )
    agree = np.zeros(len(value), dtype=bool)
    if paired:
        # the library gives the unpaired interval (and a flag) when the two versions agree
        # on every reviewed unit
        a = [i for i, c in enumerate(names) if c.startswith("a:")]
        b = [names.index("b:" + names[i][2:]) for i in a]
        agree = (Y[:, :, a] == Y[:, :, b]).all(axis=(1, 2))
        if agree.any():
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                ulo, uhi = score_bounds(
                    phi,
                    mean,
                    cov,
                    1.0,
                    n,
                    index,
                    LEVEL,
                    bounds,
                    bounded=bounded,
                    paired=False,
                    draws=(Y, None),
                )
            lo, hi = np.where(agree, ulo, lo), np.where(agree, uhi, hi)
    reliable = np.isfinite(se) & np.isfinite(value) & ~agree
    if bounds is not None:
        reliable &= (value >= bounds[0] - 1e-9) & (value <= bounds[1] + 1e-9)
    if hosts is not None:
        # diagnostics.host_view_value, for every replicate at once
        parts = phi.args if paired else (phi,)
        alt = [
            _host_value(part, mean, index, hosts[pre])
            for part, pre in zip(parts, hosts, strict=True)
        ]
        alt = alt[0] - alt[1] if paired else alt[0]
        tol = 1e-9 * np.maximum(1.0, np.abs(value))
        with np.errstate(invalid="ignore"):
            outside = np.isfinite(alt) & ((alt < lo - tol) | (alt > hi + tol))
        reliable &= ~(outside & np.isfinite(lo) & np.isfinite(hi))
    if unreviewed is not None:
        reliable &= ~unreviewed
    return {
        "value": value,
        "std_error": se,
        "ci_low": lo,
        "ci_high": hi,
        "reliable": reliable,
        "n_events": n_events,
    }


def group_views(prediction, groups, census, unit_of_record, draws) -> dict:
    """Per group of ``prediction`` and per replicate (rows of ``draws``), what the library
    computes on the replicate's sample about the group's predicted clusters ĉ ∩ g: the
    hosts' view, ``H`` the minority links of the clusters whose host (the entity holding
    more than half of ĉ ∩ g) was drawn, ``m`` the mean over the draws of the links
    ``|ĉ ∩ g ∩ u| (|ĉ ∩ g| - 1)/2 / p_u`` of the drawn minority records of those clusters,
    ``links`` the group's predicted links; and ``unreviewed``, whether more than
    ``UNREVIEWED_SHARE`` of the group's predicted links sit in clusters holding each at
    least 1/n of them that no drawn unit reaches, worth fewer than
    ``UNREVIEWED_CLUSTERS`` equally large clusters. Under ``ACROSS``: ``unreviewed`` for
    the links across groups, on the predicted clusters ĉ and their links across groups,
    with their hosts' view (``H``, ``m`` and ``links`` of the links across groups)."""
    R, n = draws.shape
    U = len(census.units)
    p = census.probability / census.probability.mean()
    count = np.zeros((R, U), dtype=np.uint16)
    np.add.at(count, (np.repeat(np.arange(R), n), draws.ravel()), 1)
    drawn = count > 0
    reached = sp.csr_matrix(drawn, dtype=float)  # replicate x unit: the unit was drawn
    code, labels = pd.factorize(groups.to_numpy())
    parent_code = pd.factorize(prediction.to_numpy())[0].astype(np.int64)
    refined = parent_code * len(labels) + code
    cell = pd.factorize(refined)[0]
    size = np.bincount(cell).astype(float)
    pair, keys = pd.factorize(cell.astype(np.int64) * U + unit_of_record)
    inter = np.bincount(pair).astype(float)
    keys = np.asarray(keys, dtype=np.int64)
    unit, pred = keys % U, keys // U
    s = size[pred]
    host = 2 * inter > s
    host_of = np.full(len(size), -1, dtype=np.int64)
    host_of[pred[host]] = unit[host]
    group_of = np.zeros(len(size), dtype=np.int64)
    group_of[cell] = code
    parent_of = np.zeros(len(size), dtype=np.int64)
    parent_of[cell] = parent_code
    minority = (2 * inter < s) & (host_of[pred] >= 0)
    out = {}
    for j, label in enumerate(labels):
        hj = host & (group_of[pred] == j)
        hosted = (s[hj] - inter[hj]) * (s[hj] - 1) / 2
        H = reached @ np.bincount(unit[hj], weights=hosted, minlength=U)
        mj = minority & (group_of[pred] == j)
        u, h = unit[mj], host_of[pred[mj]]
        w = inter[mj] * (s[mj] - 1) / 2 / p[u]
        m = (count[:, u] * drawn[:, h]).astype(float) @ w / n
        links = comb2(size).astype(float) * (group_of == j)
        unreviewed = _out_of_reach(links, pred, unit, reached, n, U)
        out[label] = {"H": H, "m": m, "links": float(links.sum()), "unreviewed": unreviewed}
    # the links across groups of each predicted cluster ĉ: C(|ĉ|, 2) - Σ_g C(|ĉ ∩ g|, 2)
    pred_size = np.bincount(parent_code).astype(float)
    cross = comb2(pred_size) - np.bincount(parent_of, weights=comb2(size), minlength=len(pred_size))
    # the hosts' view of the links across groups: a record of group g in ĉ has
    # x = (|ĉ| - |ĉ ∩ g|)/2 half-links across groups
    trip, tkeys = pd.factorize(cell.astype(np.int64) * U + unit_of_record)
    tcount = np.bincount(trip).astype(float)
    tkeys = np.asarray(tkeys, dtype=np.int64)
    t_unit, t_cell = tkeys % U, tkeys // U
    t_parent = parent_of[t_cell]
    x = tcount * (pred_size[t_parent] - size[t_cell]) / 2
    pu, pkeys = pd.factorize(t_parent * U + t_unit)
    p_inter = np.bincount(pu, weights=tcount)
    pkeys = np.asarray(pkeys, dtype=np.int64)
    p_unit, p_parent = pkeys % U, pkeys // U
    p_host = 2 * p_inter > pred_size[p_parent]
    host_of = np.full(len(pred_size), -1, dtype=np.int64)
    host_of[p_parent[p_host]] = p_unit[p_host]
    seen = np.bincount(pu, weights=x)
    hosted = cross[p_parent[p_host]] - seen[p_host]
    H = reached @ np.bincount(p_unit[p_host], weights=hosted, minlength=U)
    mx = (2 * p_inter[pu] < pred_size[t_parent]) & (host_of[t_parent] >= 0)
    u, h = t_unit[mx], host_of[t_parent[mx]]
    m = (count[:, u] * drawn[:, h]).astype(float) @ (x[mx] / p[u]) / n
    out[ACROSS] = {
        "H": H,
        "m": m,
        "links": float(cross.sum()),
        "unreviewed": _out_of_reach(
            cross, parent_of[pred], unit, reached, n, U, UNREVIEWED_CLUSTERS_ACROSS
        ),
    }
    return out


def _out_of_reach(
    links, pair_cell, pair_unit, reached, n: int, U: int, few: float = UNREVIEWED_CLUSTERS
) -> np.ndarray:
    """Per replicate: whether more than ``UNREVIEWED_SHARE`` of ``links`` (per cell) sit in
    cells holding each at least 1/n of them that no drawn unit reaches (``reached``:
    replicate x unit; ``pair_cell``, ``pair_unit``: the cells' records by true cluster),
    worth fewer than ``few`` equally large cells."""
    total = links.sum()
    share = links / total if total else links
    big = np.flatnonzero((links > 0) & (share >= 1.0 / n))
    col = np.full(len(links), -1)
    col[big] = np.arange(len(big))
    sel = col[pair_cell] >= 0
    touches = sp.csr_matrix(
        (np.ones(int(sel.sum())), (pair_unit[sel], col[pair_cell[sel]])), shape=(U, len(big))
    )
    reach = (reached @ touches).toarray() > 0
    out_of_reach = (~reach).astype(float)
    unreviewed = out_of_reach @ share[big]
    squares = out_of_reach @ share[big] ** 2
    keff = unreviewed**2 / np.where(squares > 0, squares, 1.0)
    return (unreviewed > UNREVIEWED_SHARE) & (keff < few)


def _host_value(phi, mean, index, host) -> np.ndarray:
    """diagnostics.host_view_value of ``phi`` on every replicate (NaN where it does not
    apply): the precision ``B/A`` with the hosts' count, ``(B/A) / (1 + H/|P| - m/A)``."""

    def precision(node):
        if not (isinstance(node, Ratio) and node.is_ratio()):
            return None
        num, den = (a.name for a in node.args)
        if not den.endswith("P_links") or not host["links"]:
            return None
        b, a = mean[:, index[num]], mean[:, index[den]]
        with np.errstate(all="ignore"):
            return np.where(a > 0, b / a / (1 + host["H"] / host["links"] - host["m"] / a), np.nan)

    nan = np.full(len(mean), np.nan)
    if isinstance(phi, FBeta):
        pr, r_node = precision(phi.args[0]), phi.args[1]
        if pr is None or not (isinstance(r_node, Ratio) and r_node.is_ratio()):
            return nan
        num, den = (a.name for a in r_node.args)
        b2 = phi.beta**2
        with np.errstate(all="ignore"):
            r = mean[:, index[num]] / mean[:, index[den]]
            return np.where(b2 * pr + r > 0, (1 + b2) * pr * r / (b2 * pr + r), np.nan)
    pr = precision(phi)
    return nan if pr is None else pr


def _difference(pa, ca, pb, cb):
    phi = Linear([1.0, -1.0], [pa.rename("a:"), pb.rename("b:")])
    return phi, {**{"a:" + k: v for k, v in ca.items()}, **{"b:" + k: v for k, v in cb.items()}}


def _sample(truth, census, draws_row) -> Sample:
    """The Sample of one replicate (to check the vectorised numbers against the library)."""
    pos, mult = np.unique(draws_row, return_counts=True)
    units = census.units[pos]
    return Sample(
        reference=truth[truth.isin(units)],
        units=units,
        multiplicity=mult,
        probability=np.asarray(census.probability, dtype=float)[pos],
        design="records",
        weights="cluster_size",
        replace=True,
        population_size=len(truth),
    )


def _check(label: str, got: dict, want: pd.Series, reliable: bool = False) -> None:
    """Replicate 0 of the vectorised path against the library's public function (and its
    ``reliable`` flag when asked)."""
    for k in ("value", "std_error", "ci_low", "ci_high"):
        a, b = float(got[k][0]), float(want[k])
        if not (np.isclose(a, b, rtol=1e-7, atol=1e-7) or (np.isnan(a) and np.isnan(b))):
            raise AssertionError(f"{label}: {k} {a!r} (vectorised) != {b!r} (library)")
    if reliable and np.isfinite(got["value"][0]) and bool(got["reliable"][0]) != want["reliable"]:
        raise AssertionError(f"{label}: reliable {got['reliable'][0]} != {want['reliable']}")


def _rows(base: dict, rep: dict, true_value: float) -> dict:
    """One summary row: coverage with its Monte-Carlo SE, width, bias, RMSE, flagged."""
    v, lo, hi, ok = rep["value"], rep["ci_low"], rep["ci_high"], rep["reliable"]
    finite = np.isfinite(v) & np.isfinite(lo) & np.isfinite(hi)
    covered = finite & (lo <= true_value + 1e-12) & (true_value - 1e-12 <= hi)
    m = int(finite.sum())
    cov = covered.sum() / m if m else math.nan
    rel = finite & ok
    # a candidate rule, not the library's: also flag estimates whose errors (or correct
    # part) rest on fewer than MIN_EVENTS effective units
    rel_events = rel & (rep["n_events"] >= MIN_EVENTS)
    return {
        **base,
        "true_value": true_value,
        "replicates": len(v),
        "defined": m,
        "coverage": cov,
        "mc_se": math.sqrt(cov * (1 - cov) / m) if m else math.nan,
        "coverage_reliable": covered[rel].sum() / rel.sum() if rel.any() else math.nan,
        "flagged": 1 - rel.sum() / m if m else math.nan,
        "coverage_reliable_events": covered[rel_events].sum() / rel_events.sum()
        if rel_events.any()
        else math.nan,
        "flagged_events": 1 - rel_events.sum() / m if m else math.nan,
        "width": float(np.mean(hi[finite] - lo[finite])) if m else math.nan,
        "bias": float(np.mean(v[finite]) - true_value) if m else math.nan,
        "rmse": float(np.sqrt(np.mean((v[finite] - true_value) ** 2))) if m else math.nan,
        "misses_above": float(np.mean(lo[finite & ~covered] > true_value))
        if (finite & ~covered).any()
        else math.nan,
    }


def _share(event: np.ndarray, among: np.ndarray) -> float:
    return float(np.mean(event[among])) if among.any() else math.nan


def run_truth(name: str, args) -> tuple[pd.DataFrame, pd.DataFrame]:
    truth, names = load_truth(name)
    N = len(truth)
    # every true cluster once: the per-unit totals each replicate indexes
    census = benchmark_sample(
        truth, weights="cluster_size", replace=False, population_size=truth.nunique()
    )
    unit_of_record = census.units.get_indexer(truth.to_numpy())
    root = np.random.SeedSequence([args.seed, sum(map(ord, name))])
    key_seed, group_seed, draw_seed, *mech_seeds = root.spawn(3 + len(args.mechanisms))
    keys = {k: block_keys(truth, losses, key_seed.spawn(1)[0]) for k, losses in KEY_LOSSES.items()}
    if name == "rldata10000":
        keys["birth year"] = load_rldata10000()[0][["by"]]
    groups = make_groups(truth, group_seed)
    rng = np.random.default_rng(draw_seed)
    draws = {n: unit_of_record[rng.integers(0, N, size=(args.replicates, n))] for n in args.sizes}
    rows, tests = [], []

    # statistics of the truth: independent of the prediction
    ut = summary_units(census, names)
    for n in args.sizes:
        stats = [
            s
            for s in SUMMARY_RATIOS
            if names is not None or s.endswith(("size", "share", "matching_rate"))
        ]
        exact = summary_statistics(truth, names)
        want = estimate_summary(_sample(truth, census, draws[n][0]), names, stats).set_index(
            "metric"
        )
        for stat in stats:
            phi = SUMMARY_RATIOS[stat]
            bounds = None if stat == "average_cluster_size" else (0.0, 1.0)
            rep = replicates(phi, {c: ut.weighted(c) for c in phi.columns()}, draws[n], bounds)
            _check(f"{name} n={n} {stat}", rep, want.loc[stat])
            base = {"truth": name, "family": "truth", "mechanism": "-", "n": n, "case": "-"}
            rows.append(_rows({**base, "group": "-", "metric": stat}, rep, float(exact[stat])))

    for mechanism, seed in zip(args.mechanisms, mech_seeds, strict=True):
        s_base, s_group = seed.spawn(2)
        s_group = int(s_group.generate_state(1)[0])  # the same runs for both versions
        make = ERROR_MECHANISMS[mechanism]
        prediction = make(truth, RATE, seed=np.random.default_rng(s_base))
        # blocking
        for case, key in keys.items():
            exact = blocking_metrics(prediction, truth, key)
            codes = _reviewed_codes(census, key, "error")
            but, totals = _blocked_units(
                prediction, census, codes, on_missing="error", validate=False
            )

            cols = {"pairs": but.weighted("pairs")}
            cols.update({k: v / but.probability for k, v in totals.items()})
            for n in args.sizes:
                s0 = _sample(truth, census, draws[n][0])
                want = blocking_table({"p": prediction}, s0, key, validate=False).set_index(
                    "metric"
                )
                for metric, phi in _RATIOS.items():
                    rep = replicates(phi, cols, draws[n], (0.0, 1.0))
                    _check(f"{name} {mechanism} {case} n={n} {metric}", rep, want.loc[metric])
                    base = {"truth": name, "family": "blocking", "mechanism": mechanism, "n": n}
                    rows.append(
                        _rows(
                            {**base, "case": case, "group": "-", "metric": metric},
                            rep,
                            exact[metric],
                        )
                    )
        # groups
        for scenario, rates in GROUP_RATES.items():
            a = grouped_prediction(truth, groups, mechanism, rates, 1.0, s_group)
            b = grouped_prediction(truth, groups, mechanism, rates, 0.5, s_group)
            tables = {
                v: group_unit_tables(p, census, groups, validate=False)
                for v, p in (("a", a), ("b", b))
            }
            exact = {v: group_metrics(p, truth, groups) for v, p in (("a", a), ("b", b))}
            fns = {
                (v, g, m): metric_function(tables[v][g], m, None, 1.0)[1:]
                for v in ("a", "b")
                for g in tables["a"]
                for m in GROUP_METRICS
            }
            for n in args.sizes:
                s0 = _sample(truth, census, draws[n][0])
                hv = {
                    v: group_views(p, groups, census, unit_of_record, draws[n])
                    for v, p in (("a", a), ("b", b))
                }
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want = estimate_by_group({"a": a}, s0, groups).set_index(["group", "metric"])
                    want_d = compare_by_group({"a": a, "b": b}, s0, groups).set_index(
                        ["group", "metric"]
                    )
                    want_t = group_equality_test({"a": a}, s0, groups).set_index("metric")
                base = {
                    "truth": name,
                    "family": "groups",
                    "mechanism": mechanism,
                    "n": n,
                    "case": scenario,
                }
                for g in tables["a"]:
                    for m in GROUP_METRICS:
                        phi, cols = fns[("a", g, m)]
                        hosts = {"": hv["a"][g]}
                        seen = None
                        if m != "pairwise_recall":
                            seen = hv["a"][g]["unreviewed"]
                        rep = replicates(
                            phi, cols, draws[n], (0.0, 1.0), hosts=hosts, unreviewed=seen
                        )
                        _check(
                            f"{name} {mechanism} {scenario} n={n} {g} {m}",
                            rep,
                            want.loc[(g, m)],
                            reliable=True,
                        )
                        rows.append(
                            _rows({**base, "group": g, "metric": m}, rep, exact["a"].at[g, m])
                        )
                        phi, cols = _difference(*fns[("b", g, m)], *fns[("a", g, m)])
                        hosts = {"a:": hv["b"][g], "b:": hv["a"][g]}
                        if seen is not None:
                            seen = seen | hv["b"][g]["unreviewed"]
                        rep = replicates(
                            phi,
                            cols,
                            draws[n],
                            (-1.0, 1.0),
                            paired=True,
                            hosts=hosts,
                            unreviewed=seen,
                        )
                        _check(
                            f"{name} {mechanism} {scenario} n={n} {g} {m} diff",
                            rep,
                            want_d.loc[(g, f"{m} difference")],
                        )
                        true_d = exact["b"].at[g, m] - exact["a"].at[g, m]
                        rows.append(
                            _rows({**base, "group": g, "metric": f"{m} difference"}, rep, true_d)
                        )
                # the equality test across the groups (not the links across groups)
                for m in GROUP_METRICS:
                    parts = [fns[("a", g, m)] for g in GROUPS]
                    phis = [p.rename(f"g{i}:") for i, (p, _) in enumerate(parts)]
                    cols = {f"g{i}:{k}": v for i, (_, c) in enumerate(parts) for k, v in c.items()}
                    big = Linear([1.0] * 3, phis)
                    names_ = big.columns()
                    index = {c: i for i, c in enumerate(names_)}
                    Y = np.stack(
                        [np.asarray(cols[c], dtype=float)[draws[n]] for c in names_], axis=-1
                    )
                    mean = Y.mean(axis=1)
                    dev = Y - mean[:, None, :]
                    cov = np.einsum("rni,rnj->rij", dev, dev) / (n - 1)
                    with np.errstate(all="ignore"):
                        values = np.stack(
                            [bias_corrected(p, mean, cov, 1.0, n, index) for p in phis], axis=1
                        )
                        grads = np.stack([p.evaluate(mean, index)[1] for p in phis], axis=1)
                        units = np.min(
                            [
                                effective_units(
                                    Y[:, :, [index[c] for c in p.columns()]], p, p.columns()
                                )
                                for p in phis
                            ],
                            axis=0,
                        )
                        theta = exact["a"].loc[list(GROUPS), m].to_numpy()
                        W, df = equality_statistic(values, grads, cov / n)
                        W0, df0 = equality_statistic(values, grads, cov / n, theta[:-1] - theta[-1])
                        p = equality_p_value(W, df, units - 1.0)
                        p0 = equality_p_value(W0, df0, units - 1.0)
                    if want_t.at[m, "groups"] == 3:
                        for got, key in ((W[0], "statistic"), (p[0], "p_value")):
                            ref = want_t.at[m, key]
                            if not (
                                np.isclose(got, ref, rtol=1e-7) or (np.isnan(got) and np.isnan(ref))
                            ):
                                raise AssertionError(
                                    f"{name} {mechanism} {scenario} n={n} {m}: {key} {got} != {ref}"
                                )
                    testable = np.isfinite(p)
                    reliable = testable & (units >= MIN_EFFECTIVE_UNITS)
                    chi2 = np.isfinite(W0) & (df0 > 0)
                    tests.append(
                        {
                            **base,
                            "metric": m,
                            "groups_differ": float(np.ptp(theta)),
                            "replicates": len(W),
                            "testable": testable.mean(),
                            "size": _share(p0 < 0.05, testable),
                            "rejects": _share(p < 0.05, testable),
                            "reliable": reliable.mean(),
                            "size_reliable": _share(p0 < 0.05, reliable),
                            "size_chi2": _share(W0 > chdtri(np.maximum(df0, 1), 0.05), chi2),
                        }
                    )
        print(f"{name}: {mechanism} done", file=sys.stderr)
    return pd.DataFrame(rows), pd.DataFrame(tests)


def _pct(x: float) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}"


def _ratio(k: float, m: float) -> str:
    """``k/m`` as a percentage with its binomial Monte-Carlo SE."""
    if not m:
        return "–"
    r = k / m
    return f"{int(k):,} / {int(m):,} = {100 * r:.1f}% ± {100 * math.sqrt(r * (1 - r) / m):.1f}"


def flag_summary(d: pd.DataFrame) -> str:
    """The group cells' coverage counts and the reliable flag judged on them: the share of
    the misses of the cells below 93% it flags, and the share of the replicates of the
    cells in band (93-98%, cells exact in every replicate left out) it flags; overall and
    for the estimates it can flag (precision, F1 and their differences)."""
    g = d[d["family"] == "groups"]
    m = g["defined"]
    kept = np.round((1 - g["flagged"]) * m)
    miss = np.round((1 - g["coverage"]) * m)
    caught = miss - np.round((1 - g["coverage_reliable"].fillna(1.0)) * kept)
    exact = g["true_value"].isin([0.0, 1.0]) & (g["coverage"] == 1)
    low, band = g["coverage"] < 0.93, g["coverage"].between(0.93, 0.98) & ~exact
    flaggable = ~g["metric"].str.contains("recall")
    lines = [
        f"groups: {int((~exact).sum())} varying cells: {int(low.sum())} below 93%, "
        f"{int((g['coverage'] < 0.8).sum())} below 80% (lowest {100 * g['coverage'].min():.1f}%), "
        f"{int(band.sum())} in band, {int((g['coverage'] > 0.98).sum() - exact.sum())} above 98%"
    ]
    across = g["group"] == ACROSS
    for label, sel in (
        ("all metrics", True),
        ("precision / F1", flaggable),
        ("links across groups", across),
    ):
        lines.append(
            f"  {label}: misses flagged {_ratio(caught[low & sel].sum(), miss[low & sel].sum())}; "
            f"in band flagged {_ratio((m - kept)[band & sel].sum(), m[band & sel].sum())}"
        )
    # the candidate for recall: each side of the ratio on at least MIN_EVENTS effective units
    kept_e = np.round((1 - g["flagged_events"]) * m)
    caught_e = miss - np.round((1 - g["coverage_reliable_events"].fillna(1.0)) * kept_e)
    sel = ~flaggable
    lines.append(
        f"  recall, flagged below {MIN_EVENTS:g} effective units a side: misses flagged "
        f"{_ratio(caught_e[low & sel].sum(), miss[low & sel].sum())}; in band flagged "
        f"{_ratio((m - kept_e)[band & sel].sum(), m[band & sel].sum())}"
    )
    return "\n".join(lines)


def equality_summary(tests: dict[str, pd.DataFrame]) -> str:
    """The equality test's cells summarised per truth and n, over the cells whose groups'
    truths are not all equal (``groups_differ`` > 0): the range of its size (Hotelling's F,
    the statistic centred at the true differences), of its size among reliable tests over
    the cells where at least half the tests are reliable, of its size with a chi-square
    reference, and of its rejections."""
    lines = [
        "| truth | n | Hotelling F size | size among reliable tests (cells with ≥ 50% reliable) "
        "| chi-square size | rejections where the groups differ |",
        "|---|---|---|---|---|---|",
    ]

    def span(x: pd.Series) -> str:
        return f"{100 * x.min():.1f}–{100 * x.max():.1f}"

    for name, t in tests.items():
        for n, g in t[t["groups_differ"] > 0].groupby("n"):
            reliable = g[g["reliable"] >= 0.5]
            among = (
                f"{span(reliable['size_reliable'])} ({len(reliable)} cells)"
                if len(reliable)
                else "– (no cell)"
            )
            lines.append(
                f"| {name} | {n} | {span(g['size'])} | {among} | {span(g['size_chi2'])} | "
                f"{span(g['rejects'])} |"
            )
    return "\n".join(lines)


def report(truths) -> str:
    parts, tests = [], {}
    for name in truths:
        path = DATA / f"breakdown_{name}.csv"
        if not path.exists():
            continue
        d = pd.read_csv(path)
        t = tests[name] = pd.read_csv(DATA / f"breakdown_tests_{name}.csv")
        reps = int(d["replicates"].max())
        parts.append(f"#### Truth: {name} ({reps} replicates per cell; 95% nominal)\n")
        parts.append(flag_summary(d) + "\n")
        parts.append(
            "Per cell: coverage % ± MC SE of the default interval (flagged not reliable %); "
            "truth value in the first column.\n"
        )
        for family, title in (("blocking", "Blocking"), ("truth", "Statistics of the truth")):
            sub = d[d["family"] == family]
            if sub.empty:
                continue
            sizes = sorted(sub["n"].unique())
            parts.append(f"{title}:\n")
            parts.append(
                "| mechanism | case | metric | truth | "
                + " | ".join(f"n = {n}" for n in sizes)
                + " |"
            )
            parts.append("|---|---|---|---|" + "---|" * len(sizes))
            for (mech, case, metric), g in sub.groupby(["mechanism", "case", "metric"], sort=False):
                cells = []
                for n in sizes:
                    r = g[g["n"] == n].iloc[0]
                    cells.append(f"{_pct(r.coverage)} ± {_pct(r.mc_se)} ({_pct(r.flagged)})")
                tv = g["true_value"].iloc[0]
                parts.append(
                    f"| {mech} | {case} | {metric} | {tv:.4f} | " + " | ".join(cells) + " |"
                )
            parts.append("")
        sub = d[d["family"] == "groups"]
        if not sub.empty:
            sizes = sorted(sub["n"].unique())
            parts.append(
                "Groups (A/B/C: 60/30/10% of the entities; across: links across groups):\n"
            )
            parts.append(
                "| mechanism | scenario | group | metric | truth | "
                + " | ".join(f"n = {n}" for n in sizes)
                + " |"
            )
            parts.append("|---|---|---|---|---|" + "---|" * len(sizes))
            for (mech, case, group, metric), g in sub.groupby(
                ["mechanism", "case", "group", "metric"], sort=False
            ):
                cells = []
                for n in sizes:
                    r = g[g["n"] == n].iloc[0]
                    cells.append(f"{_pct(r.coverage)} ± {_pct(r.mc_se)} ({_pct(r.flagged)})")
                tv = g["true_value"].iloc[0]
                parts.append(
                    f"| {mech} | {case} | {group} | {metric} | {tv:.4f} | "
                    + " | ".join(cells)
                    + " |"
                )
            parts.append("")
            parts.append(
                "Equality test across A/B/C at 5% (Hotelling's F p-value): size (the statistic "
                "centred at the true differences) / rejections / testable % / size among "
                "reliable tests (reliable %) / size with a chi-square reference:\n"
            )
            head = "| mechanism | scenario | metric | range of the truth | "
            parts.append(head + " | ".join(f"n = {n}" for n in sizes) + " |")
            parts.append("|---|---|---|---|" + "---|" * len(sizes))
            for (mech, case, metric), g in t.groupby(["mechanism", "case", "metric"], sort=False):
                cells = []
                for n in sizes:
                    r = g[g["n"] == n].iloc[0]
                    cells.append(
                        f"{_pct(r['size'])} / {_pct(r.rejects)} / {_pct(r.testable)} / "
                        f"{_pct(r.size_reliable)} ({_pct(r.reliable)}) / {_pct(r.size_chi2)}"
                    )
                rng = g["groups_differ"].iloc[0]
                parts.append(
                    f"| {mech} | {case} | {metric} | {rng:.3f} | " + " | ".join(cells) + " |"
                )
            parts.append("")
    if tests:
        parts += [
            "Equality test across A/B/C at 5%, over the cells above:\n",
            equality_summary(tests),
        ]
    return "\n".join(parts)


def speed(repeats: int) -> str:
    """Times of the public calls on the 15 PatentsView versions and the benchmark, and of
    the per-cluster counts of covered pairs by both methods."""
    lines = []
    predictions = load_patentsview_predictions()
    mentions = load_patentsview_mentions()
    sample = benchmark_sample(load_patentsview_benchmark(), weights="cluster_size")
    country = mentions["country"].astype(object).where(mentions["country"].notna(), "(none)")
    groups = country.where(country.isin(["US", "JP", "KR", "TW", "CN"]), "other")
    names = join_names(mentions, ["name_first", "name_last"])
    calls = {
        "blocking_table, 15 versions, mentions' block": lambda: blocking_table(
            predictions, sample, mentions["block"], on_missing="restrict"
        ),
        "estimate_by_group, 15 versions, 6 country groups": lambda: estimate_by_group(
            predictions, sample, groups, on_missing="restrict"
        ),
        "group_equality_test, 15 versions": lambda: group_equality_test(
            predictions, sample, groups, on_missing="restrict"
        ),
        "estimate_summary, mentions' names": lambda: estimate_summary(sample, names),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, call in calls.items():
            wall, cpu = best_of(call, repeats)
            lines.append(f"| {label} | {wall:.2f} | {cpu:.2f} |")
    out = [
        "| call (PatentsView, 401 reviewed inventors) | wall s | CPU s |",
        "|---|---|---|",
        *lines,
        "",
    ]
    # the counting kernel on a census of each truth
    rows = [
        "| truth | records | pairs in clusters | passes | inclusion-exclusion s | enumeration s | auto picks |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in ("rldata10000", "patentsview", "heavy"):
        truth, _ = load_truth(name)
        cluster = pd.factorize(truth.to_numpy())[0]
        rng = np.random.default_rng(0)
        predicted = pd.factorize(ERROR_MECHANISMS["misattribute"](truth, RATE, seed=1).to_numpy())[
            0
        ]
        pairs = int((np.bincount(cluster) * (np.bincount(cluster) - 1) // 2).sum())
        for passes in (1, 2, 3, 4):
            keys = np.column_stack(
                [
                    block_keys(truth, (0.3,), rng.integers(1 << 30)).to_numpy()[:, 0]
                    for _ in range(passes)
                ]
            )
            args = (cluster, keys, predicted)
            t_ie = best_of(
                lambda a=args: blocked_link_counts(*a, method="inclusion_exclusion"), repeats
            )[1]
            t_en = (
                best_of(lambda a=args: blocked_link_counts(*a, method="enumerate"), 1)[1]
                if pairs * passes < 3e8
                else math.nan
            )
            grouped = (2.0**passes - 1) * len(cluster) * 2
            pick = "enumerate" if pairs * passes < grouped else "inclusion-exclusion"
            rows.append(
                f"| {name} | {len(cluster):,} | {pairs:,} | {passes} | {t_ie:.3f} | {'–' if math.isnan(t_en) else f'{t_en:.3f}'} | {pick} |"
            )
    return "\n".join(out + rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--truths", nargs="+", default=["rldata10000", "patentsview", "heavy"])
    parser.add_argument("--mechanisms", nargs="+", default=list(ERROR_MECHANISMS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[100, 400])
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20240)
    parser.add_argument("--report", action="store_true", help="print the tables from the CSVs")
    parser.add_argument("--speed", action="store_true", help="time the calls and the kernel")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--smoke", action="store_true", help="RLdata, 20 replicates, n = 100; nothing written"
    )
    args = parser.parse_args(argv)
    if args.report:
        print(report(args.truths))
        return 0
    if args.speed:
        print(f"{platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d')}")
        print(speed(args.repeats))
        return 0
    if args.smoke:
        args.truths, args.replicates, args.sizes = ["rldata10000"], 20, [100]
    for name in args.truths:
        t0 = time.time()
        rows, tests = run_truth(name, args)
        print(f"{name}: {time.time() - t0:.0f} s", file=sys.stderr)
        if args.smoke:  # every cell's first replicate matched the library
            print(f"{len(rows)} cells, {len(tests)} tests", file=sys.stderr)
            print(equality_summary({name: tests}))
            continue
        DATA.mkdir(exist_ok=True)
        rows.to_csv(DATA / f"breakdown_{name}.csv", index=False)
        tests.to_csv(DATA / f"breakdown_tests_{name}.csv", index=False)
    if not args.smoke:
        print(report(args.truths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
