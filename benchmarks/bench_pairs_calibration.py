"""Interval calibration of OASIS and static importance sampling.

A screening harness: the sampler does not depend on the variance, so each pool's runs are
drawn once per seed (``sample_labels``) and kept (in memory and cached under ``--cache``);
every variance variant is then evaluated on the same runs, at 500 / 1,000 / 2,000 labels
(the estimate after the last draw needing at most that many labels, as ``history``).
Per pool, truth, method, variant and budget: coverage of the 95% interval for precision,
recall and F1 with its Monte-Carlo SE, mean widths, and the share of runs that drew at
least one planted pair (alternative truths below).

Truths (``--truths``): ``real`` (the pool's labels); ``redraw`` (paper pools, calibrated
scores: every predicted non-match of the OASIS strata below the top predicted-non-match
stratum gets a fresh label Bernoulli(score) per run, a truth the score prior calls
typical); ``plant<k>`` (k matches planted per run uniformly among those same pairs,
the rest of the labels real). Under an alternative, a run that draws none of the
changed pairs sees exactly the data it would see under the real truth.

Variants (``--variants``), all through the one routine of the library
(``_remainder.hybrid_estimate`` with the ``model`` argument of ``_variance``; OASIS runs
with their completely labelled stratum x prediction cells substituted, as
``estimate_from_labels`` computes them):
``tree`` (the library's default: ``_variance.oracle_rates``, the model only in strata
with no labelled match; for OASIS on its uncut strata, ``model_strata``), ``chunks`` (the
same model on the sampler's strata, chunks of cut strata included), ``labels`` (labels only), ``allfresh`` (the previous default:
the model on every first draw) and the screening variants of :data:`VARIANTS` (all but
``blind`` = ``tree`` are changes of ``allfresh``; ``groups`` = ``tree`` without the
substitution of completed strata, an earlier estimate). Static IS runs have no oracle model:
they are evaluated with ``labels`` only. Commands: benchmarks/README.md ("OASIS
intervals"); screening, e.g.

    nice -n 10 python benchmarks/bench_pairs_calibration.py --reps 150 --seed 0 \\
        --pools abt-buy febrl patentsview --budgets 1000 2000 \\
        --variants allfresh blind labels nocal decay cal10 --out screen.csv
    python benchmarks/bench_pairs_calibration.py --smoke   # abt-buy, 2 runs to 300 labels,
                                    # every truth and variant, both tables; temp files
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))

from bench_pairs import BUDGETS, Z95, pools  # noqa: E402

from er_evaluation.pairs import (  # noqa: E402
    LabelOracle,
    _variance,
    make_sampler,
    sample_labels,
    stratify,
)
from er_evaluation.pairs._remainder import cell_codes, hybrid_estimate  # noqa: E402
from er_evaluation.pairs.samplers import (  # noqa: E402
    DEFAULT_MAX_SHARE,
    VARIANCE_PRIOR_STRENGTH,
)

PAPER_POOLS = ("abt-buy", "dblp-acm", "restaurant", "restaurant-all")
RUN_LABELS = max(BUDGETS)  # each run's length unless the budgets asked for need fewer
METRICS = ("precision", "recall", "F1")


def truth_of(labels: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """(P, R, F1) of ``predicted`` against 0/1 ``labels``."""
    tp = float(np.sum(labels * predicted))
    pp, ap = float(np.sum(predicted)), float(np.sum(labels))
    return np.array([tp / pp, tp / ap, 2 * tp / (pp + ap)])


def low_pairs(pool, strata) -> np.ndarray:
    """Pool rows of the predicted non-matches below the top predicted-non-match stratum
    (the score range where the score prior puts most unseen matches' pairs but OASIS
    draws least)."""
    neg = np.flatnonzero(strata.predicted == 0)
    top = neg[np.argmax(strata.mean_score[neg])]
    keep = (strata.predicted[strata.codes] == 0) & (strata.codes != top)
    return np.flatnonzero(keep)


def alt_labels(truth: str, pool, strata, rng) -> tuple[np.ndarray, np.ndarray]:
    """Labels of one alternative truth and the rows whose label it may change."""
    labels = pool.labels.astype(np.int8).copy()
    if truth == "real":
        return labels, np.zeros(0, dtype=np.int64)
    rows = low_pairs(pool, strata)
    if truth == "redraw":
        labels[rows] = (rng.random(len(rows)) < pool.scores[rows]).astype(np.int8)
        return labels, rows[labels[rows] != pool.labels[rows]]
    if truth.startswith("plant"):
        k = int(truth[5:])
        chosen = rng.choice(rows[labels[rows] == 0], size=k, replace=False)
        labels[chosen] = 1
        return labels, chosen
    raise ValueError(truth)


def collect(name, pool, method, truth, seeds, cache_dir: Path | None, n_labels=RUN_LABELS):
    """Runs of ``method`` on ``pool`` under ``truth`` to ``n_labels`` labels, one per seed:
    list of (run, truth (P, R, F1), changed rows)."""
    path = None
    if cache_dir is not None:
        length = "" if n_labels == RUN_LABELS else f"_{n_labels}"
        step = (
            "" if len(seeds) < 2 or seeds[1] - seeds[0] == 1000 else f"_step{seeds[1] - seeds[0]}"
        )
        # OASIS runs on the default strata (cut strata) are cached apart
        # from runs of the uncut strata of earlier defaults
        cut = f"_cut{DEFAULT_MAX_SHARE}" if method == "oasis" and DEFAULT_MAX_SHARE else ""
        path = (
            cache_dir
            / f"runs_{name}_{method}_{truth}_{seeds[0]}_{len(seeds)}{length}{step}{cut}.pkl"
        )
        if path.exists():
            with open(path, "rb") as fh:
                return _current_model(pool, method, pickle.load(fh))
    # the alternative truths are defined on the uncut 30 CSF strata per prediction group
    strata = stratify(pool.scores, pool.predicted, 30)
    sampler_strata = {
        "ais": lambda: stratify(pool.scores, pool.predicted, 64),
        "oasis": lambda: make_sampler("oasis", pool, 0).strata,  # the default strata
    }.get(method, lambda: strata)()
    out = []
    template = make_sampler("importance", pool, 0) if method == "importance" else None
    for seed in seeds:
        rng = np.random.default_rng([seed, 7])  # the truth's own stream
        labels, changed = alt_labels(truth, pool, strata, rng)
        if method == "importance":
            sampler = template
            sampler.rng = np.random.Generator(np.random.PCG64(seed))
        else:
            sampler = make_sampler(method, pool, seed, strata=sampler_strata)
        run = sample_labels(pool, sampler, LabelOracle(labels), n_labels)
        out.append((run, truth_of(labels, pool.predicted), changed))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            pickle.dump(out, fh)
    return _current_model(pool, method, out)


def _current_model(pool, method, out):
    """OASIS runs with the variance model the current sampler code gives them (its
    ``model_strata`` and ``stratum_prior``: cached runs keep the model of the code that
    drew them), and the chunks' own leaf prior registered for the ``chunks`` variant."""
    if method != "oasis" or not out:
        return out
    strata = out[0][0].strata
    sampler = make_sampler("oasis", pool, 0, strata=strata)
    pi0 = sampler._pi0  # the sampler's prior mean per stratum (chunk)
    _CHUNK_PRIOR[id(strata)] = VARIANCE_PRIOR_STRENGTH * np.vstack([pi0, 1 - pi0])
    model = {"model_strata": sampler.model_strata, "stratum_prior": sampler.stratum_prior}
    return [(replace(run, **model), truth, changed) for run, truth, changed in out]


def prefix_ends(run, budgets) -> list[int]:
    """Draw count after the last draw needing at most each budget's labels."""
    n_labels = np.cumsum(run.new_label)
    return [int(np.searchsorted(n_labels, b, side="right")) for b in budgets]


# --- variance variants: each maps a run prefix to the ``model`` of hybrid_estimate ---


def _labelled(run):
    strata = run.model_strata if run.model_strata is not None else run.strata
    rows, first = np.unique(run.index, return_index=True)
    return strata, rows, first, strata.codes[rows], run.label[first]


def tree_model(run, *, calibrate=True, branching=2, prior_scale=None, blind_only=False, shrink=1.0):
    """The library's tree model with screening switches: ``prior_scale(n_k)`` multiplies
    the leaf prior strength of stratum k given its n_k distinct labels (Remark 4 of
    Marchant & Rubinstein 2017 applied to the variance model); ``blind_only``: the model
    rate only in strata without a labelled match, fresh draws elsewhere with their
    label."""
    if run.stratum_prior is None or (run.strata is None and run.model_strata is None):
        return None
    strata, rows, first, codes, label = _labelled(run)
    prior = np.asarray(run.stratum_prior, dtype=np.float64)
    if calibrate:
        prior = _variance.calibrated_prior(prior, strata.predicted, codes, label, shrink)
    if prior_scale is not None:
        n_k = np.bincount(codes, minlength=strata.n_strata)
        prior = prior * prior_scale(n_k)[None, :]
    rates = _variance.stratum_rates(
        codes,
        label,
        prior,
        branching=branching,
        depth_concentration=0.0 if branching is None else 1.0,
    )
    fresh = np.zeros(run.n_draws, dtype=bool)
    fresh[first] = True
    if blind_only:
        m_k = np.bincount(codes, weights=label.astype(float), minlength=strata.n_strata)
        fresh &= m_k[strata.codes[run.index]] == 0
    return fresh, rates[strata.codes[run.index]]


def fpc_model(run, **kw):
    """Tree rates turned into the rate of the pairs still unlabelled at each draw:
    M_k = m_k + r_k (N_k - d_k) matches expected in stratum k at the end; at a fresh draw t
    the rate of its stratum's pairs unlabelled then, (M_k - m_k(t)) / (N_k - d_k(t))."""
    base = tree_model(run, **kw)
    if base is None:
        return None
    fresh, rate = base
    strata, rows, first, codes, label = _labelled(run)
    k_t = strata.codes[run.index]
    n_k = strata.sizes.astype(float)
    d_k = np.bincount(codes, minlength=strata.n_strata).astype(float)
    m_k = np.bincount(codes, weights=label.astype(float), minlength=strata.n_strata)
    r_k = np.zeros(strata.n_strata)
    r_k[k_t] = rate
    total = m_k + r_k * (n_k - d_k)
    # labelled pairs and matches of each stratum before each draw (first draws only)
    order = np.sort(first)
    new_t = np.zeros(run.n_draws, dtype=bool)
    new_t[order] = True
    d_before = np.zeros(run.n_draws)
    m_before = np.zeros(run.n_draws)
    for k in np.unique(k_t):  # per stratum (<= 64 strata), vectorised over draws
        mine = (k_t == k) & new_t
        d_before[k_t == k] = (np.cumsum(mine) - mine)[k_t == k]
        lab = mine * run.label
        m_before[k_t == k] = (np.cumsum(lab) - lab)[k_t == k]
    left = n_k[k_t] - d_before
    r_t = np.clip((total[k_t] - m_before) / np.maximum(left, 1.0), 0.0, 1.0)
    return fresh, np.where(fresh, r_t, rate)


def rare_model(run, beta: float, **kw):
    """Tree rates, but strata where the run's fresh draws would find a match only rarely
    count with the model's variance of their unseen matches instead of the importance
    jump. lambda_k = (fresh draws in k) x r_k is the expected number of matches the run's
    draws in k turn up; strata with no labelled match are taken in increasing lambda_k
    while the sum of lambda stays <= ``beta``. In a run that drew none of their matches
    (probability >= 1 - beta) their error is minus their unseen matches U_k, of variance
    about r_k (N_k - d_k) (count^2), which replaces S_k r_k through the rate (predicted
    non-match strata; the influence of a non-match is 0 there)."""
    base = tree_model(run, **kw)
    if base is None:
        return None
    fresh, rate = base
    strata, rows, first, codes, label = _labelled(run)
    k_t = strata.codes[run.index]
    n_strata = strata.n_strata
    d_k = np.bincount(codes, minlength=n_strata).astype(float)
    m_k = np.bincount(codes, weights=label.astype(float), minlength=n_strata)
    r_k = np.zeros(n_strata)
    r_k[k_t] = rate
    w2 = run.weight.astype(float) ** 2
    s_k = np.bincount(k_t[fresh], weights=w2[fresh], minlength=n_strata)
    lam = d_k * r_k
    cand = np.flatnonzero((m_k == 0) & (strata.predicted == 0) & (d_k > 0))
    cand = cand[np.argsort(lam[cand], kind="stable")]
    chosen = cand[np.cumsum(lam[cand]) <= beta]
    h_t = strata.predicted[k_t]
    dd = float(np.sum(run.weight * h_t))
    pp = float(strata.sizes[strata.predicted == 1].sum())
    factor = np.ones(n_strata)
    if dd > 0 and len(chosen):
        target = (strata.sizes[chosen] - d_k[chosen]) * (dd / pp) ** 2
        factor[chosen] = target / s_k[chosen]
    return fresh, np.clip(rate * factor[k_t], 0.0, 1.0)


_CHUNK_PRIOR: dict[int, np.ndarray] = {}


def chunk_model(run):
    """The library's model on the sampler's own strata (the chunks of a cut stratum, each
    a leaf with its own prior) instead of the uncut strata they were cut from: the
    variance of OASIS runs before the model moved to the parent strata."""
    prior = _CHUNK_PRIOR.get(id(run.strata))
    if prior is None:  # nothing cut: the library's model
        return _variance.oracle_rates(run)
    return _variance.oracle_rates(replace(run, model_strata=run.strata, stratum_prior=prior))


VARIANTS = {
    # the library's model on the sampler's chunks (before it moved to their parent strata)
    "chunks": chunk_model,
    "rare01": lambda run: rare_model(run, 0.01),
    "rare025": lambda run: rare_model(run, 0.025),
    "rare05": lambda run: rare_model(run, 0.05),
    "labels": lambda run: None,
    "tree": lambda run: _variance.oracle_rates(run),
    # the library's model, but only whole prediction groups taken exactly (no substitution
    # of completed strata: an earlier estimate)
    "groups": lambda run: _variance.oracle_rates(run),
    "allfresh": lambda run: tree_model(run),
    "nocal": lambda run: tree_model(run, calibrate=False),
    "flat": lambda run: tree_model(run, branching=None),
    "blind": lambda run: tree_model(run, blind_only=True),
    "decay": lambda run: tree_model(run, prior_scale=lambda n: 1.0 / np.maximum(n, 1)),
    "decaysqrt": lambda run: tree_model(run, prior_scale=lambda n: 1.0 / np.sqrt(np.maximum(n, 1))),
    "fpc": lambda run: fpc_model(run),
    "fpcdecay": lambda run: fpc_model(run, prior_scale=lambda n: 1.0 / np.maximum(n, 1)),
    "fpcnocal": lambda run: fpc_model(run, calibrate=False),
    "cal10": lambda run: tree_model(run, shrink=10.0),
    "cal100": lambda run: tree_model(run, shrink=100.0),
}


def evaluate(run, cells, end: int, model, strata_cells=None) -> np.ndarray:
    """(value, low, high) x (P, R, F1) of the run's first ``end`` draws; ``cells`` = the
    prediction cells of every pool pair and their sizes, ``strata_cells`` the stratum x
    prediction cells of a run that carries its sampler's strata (OASIS), whose completely
    labelled cells are substituted (as ``estimates`` builds them)."""
    codes, sizes = cells
    value, se, low, high = hybrid_estimate(
        codes,
        sizes,
        run.index[:end],
        run.label[:end],
        run.weight[:end],
        [0.5],
        Z95,
        model=model,
        strata_cells=None
        if strata_cells is None
        else (strata_cells[0][run.index[:end]], strata_cells[1]),
    )
    return np.vstack([value, low, high])


def _strata_cells(pool, runs):
    """Stratum x prediction cells and their sizes of the runs' strata (every run of a pool
    and method is on the same strata, see :func:`collect`); None for runs without strata
    (static IS, AIS)."""
    strata = runs[0][0].strata if runs else None
    if strata is None:
        return None
    assert all(run.strata is strata for run, _, _ in runs)
    codes, n_cells = cell_codes(pool.predicted.astype(np.int8), strata.codes, strata.n_strata)
    return codes, np.bincount(codes, minlength=n_cells).astype(np.float64)


def screen(name, pool, method, truth, runs, variants, budgets=BUDGETS) -> list[dict]:

    codes, n_cells = cell_codes(pool.predicted.astype(np.int8), None)
    cells = codes, np.bincount(codes, minlength=n_cells).astype(np.float64)
    strata_cells = _strata_cells(pool, runs)
    rows = []
    n = len(runs)
    for variant in variants:
        res = np.full((n, len(budgets), 3, 3), np.nan)  # run, budget, (v, lo, hi), metric
        hit = np.zeros((n, len(budgets)), dtype=bool)
        truths = np.array([t for _, t, _ in runs])
        for i, (run, _, changed) in enumerate(runs):
            for b, end in enumerate(prefix_ends(run, budgets)):
                part = run.prefix(end)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    substituted = None if variant == "groups" else strata_cells
                    res[i, b] = evaluate(part, cells, end, VARIANTS[variant](part), substituted)
                hit[i, b] = np.isin(changed, run.index[:end]).any()
        for b, budget in enumerate(budgets):
            row = {
                "pool": name,
                "method": method,
                "truth": truth,
                "variant": variant,
                "budget": budget,
                "reps": n,
                "drew_changed": float(hit[:, b].mean()),
            }
            for m, metric in enumerate(METRICS):
                v, lo, hi = res[:, b, 0, m], res[:, b, 1, m], res[:, b, 2, m]
                t = truths[:, m]
                cov = (lo <= t + 1e-12) & (t <= hi + 1e-12)
                c = float(np.mean(cov))
                row[f"cover_{metric}"] = c
                row[f"cover_{metric}_mcse"] = float(np.sqrt(c * (1 - c) / n))
                row[f"width_{metric}"] = float(np.nanmean(hi - lo))
                row[f"mse_{metric}"] = float(np.mean(np.where(np.isnan(v), 1.0, (v - t) ** 2)))
                if truth != "real":  # coverage split by whether a changed pair was drawn
                    for flag, label in ((True, "drew"), (False, "nodraw")):
                        sel = hit[:, b] == flag
                        row[f"cover_{metric}_{label}"] = (
                            float(np.mean(cov[sel])) if sel.any() else np.nan
                        )
            rows.append(row)
    return rows


def table(frame: pd.DataFrame) -> str:
    lines = [
        "| pool | method | truth | variant | labels | runs | cover P / R / F1 (± MC SE) "
        "| width P / R / F1 | drew a changed pair | cover R: drew / not |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in frame.iterrows():
        cover = " / ".join(f"{100 * r[f'cover_{m}']:.1f}" for m in METRICS)
        mcse = max(r[f"cover_{m}_mcse"] for m in METRICS)
        width = " / ".join(f"{r[f'width_{m}']:.3f}" for m in METRICS)
        drew, split = "", ""
        if r["truth"] != "real":
            drew = f"{100 * r['drew_changed']:.0f}%"
            split = " / ".join(
                "-" if pd.isna(r[f"cover_recall_{k}"]) else f"{100 * r[f'cover_recall_{k}']:.0f}%"
                for k in ("drew", "nodraw")
            )
        lines.append(
            f"| {r['pool']} | {r['method']} | {r['truth']} | {r['variant']} | "
            f"{int(r['budget']):,} | {int(r['reps'])} | {cover} (± {100 * mcse:.1f}) | {width} "
            f"| {drew} | {split} |"
        )
    return "\n".join(lines)


def pool_chunks(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of the same pool, method, truth, variant and budget from runs on disjoint seed
    chunks (e.g. ``--seed 12345 --reps 50`` and ``--seed 62345 --reps 50``: seeds
    12345 + 1000 r, r = 0..99) pooled into one: coverages, widths, MSEs and the share of
    runs that drew a changed pair averaged with the runs as weights, the coverage's
    Monte-Carlo SE recomputed on the pooled runs (the split by drawn / not drawn is
    dropped: it needs per-run rows)."""
    keys = ["pool", "method", "truth", "variant", "budget"]
    means = [
        c
        for c in frame.columns
        if c == "drew_changed"
        or (c.startswith(("cover_", "width_", "mse_")) and c.endswith(METRICS))
    ]
    rows = []
    for key, g in frame.groupby(keys, sort=False):
        n = g["reps"].to_numpy(float)
        row = dict(zip(keys, key, strict=True)) | {"reps": int(n.sum())}
        for c in means:
            row[c] = float(np.sum(g[c].to_numpy(float) * n) / n.sum())
        for m in METRICS:
            c = row[f"cover_{m}"]
            row[f"cover_{m}_mcse"] = float(np.sqrt(c * (1 - c) / n.sum()))
        rows.append(row)
    return pd.DataFrame(rows)


def compact(
    frame: pd.DataFrame, variant: str = "tree", baseline: pd.DataFrame | None = None
) -> str:
    """The README table: per pool, method and budget (real truth) the coverage and widths
    of ``variant`` (static IS: labels only), the recall / F1 coverage of the previous
    model (``allfresh``) and of the labels-only variance on the same runs, and whether
    P, R and F1 are all within [92%, 98%]. With ``baseline`` (a table of the same runs
    under an earlier estimator) its P / R / F1 coverage of ``variant`` replaces the
    previous model's column."""
    real = frame[frame.truth == "real"]
    before = "P / R / F1: baseline" if baseline is not None else "R / F1: previous model"
    lines = [
        "| pool | method | labels | runs | cover P / R / F1 (MC SE) | width P / R / F1 "
        f"| {before} | R / F1: labels only | in [92, 98] |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    if baseline is not None:
        baseline = baseline[baseline.truth == "real"].set_index(
            keys := ["pool", "method", "budget"]
        )
    keys = ["pool", "method", "budget"]
    for (pool, method, budget), rows in real.groupby(keys, sort=False):
        by = rows.set_index("variant")
        r = by.loc[variant] if variant in by.index else by.loc["labels"]
        cover = [100 * r[f"cover_{m}"] for m in METRICS]
        mcse = max(100 * r[f"cover_{m}_mcse"] for m in METRICS)

        def pair(name, by=by):
            if name not in by.index or (name == "labels" and variant not in by.index):
                return "-"
            return " / ".join(f"{100 * by.loc[name][f'cover_{m}']:.1f}" for m in METRICS[1:])

        def earlier(pool=pool, method=method, budget=budget):
            if baseline is None:
                return pair("allfresh")
            if (pool, method, budget) not in baseline.index:
                return "-"
            b = baseline.loc[[(pool, method, budget)]]
            b = b[b.variant == (variant if method != "importance" else "labels")].iloc[0]
            return " / ".join(f"{100 * b[f'cover_{m}']:.1f}" for m in METRICS)

        outside = [
            short + (" (exact)" if short == "P" and r["width_precision"] < 1e-3 else "")
            for short, c in zip(("P", "R", "F1"), cover, strict=True)
            if not 92 <= c <= 98
        ]
        band = "all" if not outside else "outside: " + ", ".join(outside)
        lines.append(
            f"| {pool} | {method} | {int(budget):,} | {int(r['reps'])} | "
            + " / ".join(f"{c:.1f}" for c in cover)
            + f" ({mcse:.1f}) | "
            + " / ".join(f"{r[f'width_{m}']:.3f}" for m in METRICS)
            + f" | {earlier()} | {pair('labels')} | {band} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pools", nargs="+", default=list(PAPER_POOLS))
    parser.add_argument("--methods", nargs="+", default=["oasis", "importance"])
    parser.add_argument("--truths", nargs="+", default=["real"])
    parser.add_argument("--variants", nargs="+", default=["tree", "labels"])
    parser.add_argument("--reps", type=int, default=150)
    parser.add_argument("--budgets", nargs="+", type=int, default=list(BUDGETS))
    parser.add_argument("--seed", type=int, default=0, help="seeds seed + step r")
    parser.add_argument("--seed-step", type=int, default=1000, help="step between seeds")
    parser.add_argument("--cache", default="/work/tmp_calib", help="run cache ('' = none)")
    parser.add_argument("--out", default="/work/tmp_calib/screen.csv")
    parser.add_argument("--report", nargs="+", metavar="CSV", help="markdown table from CSVs")
    parser.add_argument(
        "--readme", nargs="+", metavar="CSV", help="the README's compact table (chunks pooled)"
    )
    parser.add_argument(
        "--baseline", metavar="CSV", help="with --readme: coverage of the same runs before"
    )
    parser.add_argument(
        "--pooled", nargs="+", metavar="CSV", help="write --out: CSVs of seed chunks pooled"
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="abt-buy, OASIS and static IS, 2 runs to 300 labels, every truth and variant, "
        "then both tables; cache and CSV in a temporary folder (seconds)",
    )
    args = parser.parse_args()
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            out = str(Path(tmp) / "screen.csv")
            argv = ["--pools", "abt-buy", "--truths", "real", "redraw", "plant2"]
            argv += ["--variants", *VARIANTS, "--reps", "2", "--budgets", "100", "300"]
            run(parser.parse_args([*argv, "--cache", tmp, "--out", out]))
            print(compact(pool_chunks(pd.read_csv(out))))
        return
    if args.readme:
        baseline = pd.read_csv(args.baseline) if args.baseline else None
        frame = pool_chunks(pd.concat([pd.read_csv(p) for p in args.readme]))
        print(compact(frame, baseline=baseline))
        return
    if args.report:
        print(table(pd.concat([pd.read_csv(p) for p in args.report], ignore_index=True)))
        return
    if args.pooled:
        pool_chunks(pd.concat([pd.read_csv(p) for p in args.pooled])).to_csv(args.out, index=False)
        return
    run(args)


def run(args: argparse.Namespace) -> None:
    """Every (pool, method, truth) of ``args``: its runs, then every variant on them."""
    seeds = [args.seed + args.seed_step * r for r in range(args.reps)]
    cache = Path(args.cache) if args.cache else None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, pool in pools(args.pools):
        for method in args.methods:
            for truth in args.truths:
                if truth != "real" and name not in PAPER_POOLS:
                    continue  # alternatives need calibrated scores
                start = time.perf_counter()
                runs = collect(name, pool, method, truth, seeds, cache, max(args.budgets))
                t_runs = time.perf_counter() - start
                variants = args.variants if method != "importance" else ["labels"]
                rows += screen(name, pool, method, truth, runs, variants, args.budgets)
                pd.DataFrame(rows).to_csv(out, index=False)
                print(
                    f"{name} {method} {truth}: runs {t_runs:.0f}s, "
                    f"variants {time.perf_counter() - start - t_runs:.0f}s",
                    flush=True,
                )
    print(table(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
