"""Which difference from the authors' `oasis` 0.1.3 package moves OASIS's F1 MSE.

Runs the library's :class:`~er_evaluation.pairs.OASISSampler` under package-like
configurations and scores each run with the package's own estimate, the weighted ratio
F = sum w l lhat / (alpha sum w lhat + (1 - alpha) sum w l) over every draw with the
weight of its own proposal (Marchant & Rubinstein 2017, Algorithm 3, line 11), at 500,
1,000 and 2,000 distinct labels (repeats of a labelled pair are free, as in the
package's ``sample_distinct``). A configuration is ``strata,eta,decay,formula``:

- strata ``ours``: CSF per prediction group on 40 K equal histogram bins (the former
  default); ``ours-fd``: CSF per prediction group on Freedman-Diaconis bins
  (``stratify(n_bins="fd")``); ``pkg-group``: the package's stratification below within
  each prediction group; ``pkg``: the package's ``stratify_by_scores`` re-written
  here (CSF over all scores, FD bins, left bin edges, predictions mixed in a stratum);
- eta: prior pseudo-labels per stratum (the package: 2K in total = 2 per stratum);
- decay 1/0: Marchant & Rubinstein 2017 Remark 4 (the package's ``decaying_prior=True``);
- formula ``ours`` (sum of square roots, exact for strata of one prediction) or ``pkg``
  (the package's square root of the stratum's mean squared gradient, for mixed strata).

    nice -n 10 python benchmarks/bench_oasis_config.py --pool abt-buy --reps 200 \\
        --configs ours,2,0,ours pkg-group,2,0,ours pkg,2,0,pkg
    nice -n 10 python benchmarks/bench_oasis_config.py --pool restaurant-all --reps 50 \\
        --configs pkg,2,1,pkg ours-fd,2,1,ours
    nice -n 10 python benchmarks/bench_oasis_config.py --pool abt-buy --reps 300 \\
        --configs ours,2,0,ours --runs-out benchmarks/data/bench_oasis_balance_runs.csv
    python benchmarks/bench_oasis_config.py --summarize benchmarks/data/bench_oasis_balance_runs.csv

Every configuration is also scored with balance-heuristic weights (:func:`run`).

``--decompose``: where the F1 error of the library's substituted estimate comes from, per
stratum x prediction cell, on the library's own runs (:func:`decompose`):

    nice -n 10 python benchmarks/bench_oasis_config.py --decompose --pool dblp-acm --reps 30 \
        --seed 0 --out benchmarks/data/bench_oasis_decompose.csv   # likewise 3 more pools
    nice -n 10 python benchmarks/bench_oasis_config.py --decompose --pool dblp-acm --reps 30 \
        --seed 0 --max-share 0.0333 --shared-prior --out benchmarks/data/bench_oasis_decompose.csv
    python benchmarks/bench_oasis_config.py --smoke   # abt-buy, every strata kind and
                         # formula, 2 runs to 300 labels, the summary, --decompose; temp files
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from bench_pairs import pools

from er_evaluation.pairs import LabelOracle, estimates, sample_labels, stratify
from er_evaluation.pairs._remainder import _substituted_sums
from er_evaluation.pairs._stratify import ScoreStrata
from er_evaluation.pairs.samplers import OASISSampler

BUDGETS = (500, 1000, 2000)


def strata_from_alloc(alloc, scores, predicted):
    names, codes = np.unique(alloc, return_inverse=True)
    k = len(names)
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=k)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    pred = np.bincount(codes, weights=predicted.astype(float), minlength=k) / sizes
    return ScoreStrata(
        codes=codes.astype(np.int32),
        order=order,
        offsets=offsets,
        sizes=sizes.astype(np.int64),
        predicted=pred,
        mean_score=np.bincount(codes, weights=scores, minlength=k) / sizes,
    )


def fd_bins(x):
    iqr = np.percentile(x, 75) - np.percentile(x, 25)
    width = 2 * iqr * len(x) ** (-1 / 3)
    if width <= 0:
        return 10000
    return int(np.ceil(np.ptp(x) / width))


def pkg_alloc(scores, goal, n_bins=None):
    n_bins = n_bins or fd_bins(scores)
    counts, score_bins = np.histogram(scores, bins=n_bins)
    csf = np.cumsum(np.sqrt(counts))
    width = csf[-1] / goal
    csf_bins = [x * width for x in np.arange(goal + 1)]
    j = 0
    new_bins = []
    for idx, value in enumerate(csf):
        if j == len(csf_bins) - 1 or idx == len(csf) - 1:
            new_bins.append(score_bins[-1])
            break
        if value >= csf_bins[j]:
            new_bins.append(score_bins[idx])
            j += 1
    new_bins[0] -= 0.01
    new_bins[-1] += 0.01
    return np.digitize(scores, bins=new_bins, right=True) - 1


class PkgFormula(OASISSampler):
    def _proposal(self):
        pi = self.posterior_mean()
        F, a = self.f_hat, self._alpha
        lam = self.lam
        arg = (
            lam * (a * a * F * F * (1 - pi) + (1 - F) ** 2 * pi)
            + (1 - lam) * (1 - a) ** 2 * F * F * pi
        )
        opt = self.omega * np.sqrt(arg)
        total = opt.sum()
        v = self._eps_omega + ((1 - self.epsilon) / total) * opt if total > 0 else self.omega.copy()
        self._cum = np.cumsum(v)
        return v


def make_strata(pool, kind, K):
    s, p = pool.scores, pool.predicted
    if kind == "ours":
        return stratify(s, p, K, n_bins=None)
    if kind == "pkg":
        return strata_from_alloc(pkg_alloc(s, K), s, p)
    if kind == "ours-fd":  # the library's FD strata
        return stratify(s, p, K, n_bins="fd")
    if kind == "pkg-group":  # the package's stratification within each prediction group
        alloc = np.empty(len(s), dtype=np.int64)
        base = 0
        for flag in (0, 1):
            m = p == flag
            a = pkg_alloc(s[m], K)
            alloc[m] = base + a
            base += a.max() + 1
        return strata_from_alloc(alloc, s, p)
    raise ValueError(kind)


def run(pool, strata, reps, seed0, eta, decay, eps, formula, runs_out=None, name=""):
    """Squared F1 errors per run and budget of the package's estimate with each draw's own
    weight omega_k / v_tk, and of the same ratio with balance-heuristic weights
    omega_k / vbar_k, vbar_k = (1/T) sum_t v_tk the stratum's mean proposal over the T
    draws so far (the deterministic-mixture weights of Veach & Guibas 1995, recycled
    over adaptive proposals as in AMIS, Cornuet et al. 2012; consistent, not unbiased
    for adaptive proposals); draws per label. With ``runs_out`` each run's rows are
    appended to that CSV."""
    labels = pool.labels.astype(np.int8)
    pred = pool.predicted.astype(float)
    truth = pool.truth()["pairwise_f1"]
    cls = PkgFormula if formula == "pkg" else OASISSampler
    sq = np.zeros((reps, len(BUDGETS)))
    sq_bal = np.zeros((reps, len(BUDGETS)))
    dpl = 0
    k = strata.n_strata
    for rep in range(reps):
        smp = cls(pool, seed0 + 1000 * rep, strata=strata, eta=eta, decay=decay, epsilon=eps)
        seen = np.zeros(pool.n_pairs, bool)
        nl = 0
        b = 0
        draws = 0
        sa = sh = sl = 0.0
        v_sum = np.zeros(k)  # sum over draws of each stratum's proposal
        counts = np.zeros((3, k))  # per stratum: l lhat, lhat, l of the draws
        while b < len(BUDGETS):
            v = smp._v
            d = smp.draw()
            if not seen[d.index]:
                if nl == BUDGETS[b]:
                    F = sa / (0.5 * sh + 0.5 * sl) if sh + sl > 0 else np.nan
                    sq[rep, b] = 1.0 if not np.isfinite(F) else (F - truth) ** 2
                    wb = smp.omega / np.maximum(v_sum / draws, 1e-300)
                    ba, bh, bl = counts @ wb
                    F = ba / (0.5 * bh + 0.5 * bl) if bh + bl > 0 else np.nan
                    sq_bal[rep, b] = 1.0 if not np.isfinite(F) else (F - truth) ** 2
                    b += 1
                    if b == len(BUDGETS):
                        break
                seen[d.index] = True
                nl += 1
            v_sum += v
            label = int(labels[d.index])
            lh = pred[d.index]
            w = d.weight
            sa += w * label * lh
            sh += w * lh
            sl += w * label
            counts[:, d.stratum] += (label * lh, lh, label)
            smp.observe(d.index, label)
            draws += 1
        dpl += draws
        if runs_out is not None:
            rows = pd.DataFrame(
                {
                    "pool": pool_name_of(name),
                    "config": name,
                    "seed": seed0 + 1000 * rep,
                    "budget": BUDGETS,
                    "sq_own": sq[rep],
                    "sq_balance": sq_bal[rep],
                    "draws": draws,
                }
            )
            rows.to_csv(runs_out, mode="a", header=not Path(runs_out).exists(), index=False)
    return sq, sq_bal, dpl / (reps * BUDGETS[-1])


def _f1_shift(e_tp: float, e_fn: float, truth: tuple, exact: tuple) -> float:
    """F1 at TP + e_tp, FN + e_fn minus the true F1 (truth = TP, FN, PP); an error of a
    prediction group labelled completely (``exact``: predicted matches, non-matches) is 0,
    as in the estimate."""
    tp_true, fn_true, pp = truth
    tp = tp_true + (0.0 if exact[0] else e_tp)
    fn = fn_true + (0.0 if exact[1] else e_fn)
    return 2 * tp / (pp + tp + fn) - 2 * tp_true / (pp + tp_true + fn_true)


def decompose(pool, reps: int, seed0: int, budget: int = 2000, **params) -> pd.DataFrame:
    """The F1 error at ``budget`` labels of the substituted estimate (TP = PP A'/D',
    FN = PP C'/D', a prediction group labelled completely exact;
    ``_remainder._substituted_sums``) split by where it comes from, on OASIS runs with
    ``params`` (seeds seed0 + 1000 r). Per cell c (stratum x prediction) its share S_c of
    A' or C' (the sums with every other cell's labels set to 0) has expectation
    T M_c / N, so the cell adds PP S_c / D' - M_c to the TP or FN error; the first-order
    F1 error is dF/dTP e_TP + dF/dFN e_FN. Rows per run: the F1 error, and the F1 error
    left by one source alone (the others at their truth): ``open`` cells (some pair
    unlabelled at the end), ``complete`` cells (every pair labelled: only their terms
    from the draws before completion err), ``normaliser`` (D' against T PP / N, scaling
    every labelled match); draws T, the draw at which the last cell holding a match was
    completed, and the matches of open cells."""
    labels = pool.labels.astype(np.int8)
    oracle = LabelOracle(pool.labels)
    predicted = pool.predicted.astype(np.int64)
    strata = stratify(pool.scores, pool.predicted, 30, max_share=params.pop("max_share", None))
    n = pool.n_pairs
    pp = float(predicted.sum())
    truth = (float(np.sum(labels * predicted)), float(np.sum(labels * (1 - predicted))), pp)
    rows = []
    for rep in range(reps):
        seed = seed0 + 1000 * rep
        sampler = OASISSampler(pool, seed, strata=strata, **params)
        run = sample_labels(pool, sampler, oracle, budget)
        cells, sizes, _ = estimates._cells(run, predicted)
        t = run.n_draws
        y, w = run.label.astype(np.float64), run.weight.astype(np.float64)
        c_t = cells[run.index]
        _, _, d_sum, _ = _substituted_sums(c_t, sizes, run.index, y, w, t)
        n_cells = len(sizes)
        m_true = np.bincount(cells, weights=labels, minlength=n_cells)
        labelled = np.bincount(cells[np.unique(run.index)], minlength=n_cells)
        full = labelled == sizes
        h = np.arange(n_cells) % 2 == 1
        share = np.zeros(n_cells)  # S_c, the cell's part of A' (h) or C' (not h)
        for c in np.flatnonzero(m_true > 0):
            a_c, c_c, _, _ = _substituted_sums(c_t, sizes, run.index, y * (c_t == c), w, t)
            share[c] = a_c if h[c] else c_c
        # numerator error of each cell at the true normaliser, and the normaliser's part
        own = n * share / t - m_true
        scale = t * pp / (n * d_sum) - 1.0
        norm = n * share / t * scale

        exact = (bool(full[h].all()), bool(full[~h].all()))  # a group labelled completely

        def part(e, select, exact=exact, h=h):
            return _f1_shift(
                float(np.sum(e[select & h])), float(np.sum(e[select & ~h])), truth, exact
            )

        with_matches = m_true > 0
        done = np.full(n_cells, -1)
        first = np.unique(run.index, return_index=True)[1]
        np.maximum.at(done, cells[run.index[first]], first)
        last_done = int(done[with_matches & full].max()) if (with_matches & full).any() else -1
        rows.append(
            {
                "seed": seed,
                "draws": t,
                "f1_error": part(own + norm, with_matches),
                "open": part(own, with_matches & ~full),
                "complete": part(own, with_matches & full),
                "normaliser": part(norm, with_matches),
                "last_completion_draw": last_done,
                "open_matches": int(m_true[with_matches & ~full].sum()),
                "open_cells_with_matches": int((with_matches & ~full).sum()),
            }
        )
    return pd.DataFrame(rows)


def pool_name_of(name: str) -> str:
    return name.split(" ")[0]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pool", default="abt-buy")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--configs", nargs="+", default=["ours,2,0,ours"])
    ap.add_argument("--K", type=int, default=30)
    ap.add_argument("--eps", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--runs-out", help="per-run CSV (squared errors), appended after every run")
    ap.add_argument("--summarize", nargs="+", metavar="RUNS_CSV", help="summaries of per-run CSVs")
    ap.add_argument("--decompose", action="store_true", help="sources of the F1 error (decompose)")
    ap.add_argument("--max-share", type=float, help="OASIS max_share for --decompose")
    ap.add_argument("--budget", type=int, default=2000, help="labels for --decompose")
    ap.add_argument(
        "--shared-prior", action="store_true", help="OASIS shared_prior for --decompose"
    )
    ap.add_argument("--out", help="CSV of --decompose's rows (appended)")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="abt-buy, every strata kind with and without decay and both formulas, 2 runs "
        "to 300 labels, their summary and --decompose at 300 labels; files in a temporary "
        "folder (seconds)",
    )
    a = ap.parse_args(argv)
    if a.smoke:
        global BUDGETS
        BUDGETS = (100, 300)
        configs = ["ours,2,0,ours", "ours-fd,2,1,ours", "pkg-group,2,0,ours", "pkg,2,1,pkg"]
        with tempfile.TemporaryDirectory() as tmp:
            runs, out = f"{tmp}/runs.csv", f"{tmp}/decompose.csv"
            main(["--reps", "2", "--configs", *configs, "--runs-out", runs])
            main(["--summarize", runs])
            main(["--decompose", "--reps", "2", "--budget", "300", "--out", out])
            main(["--decompose", "--reps", "2", "--budget", "300", "--max-share", "0.0333"])
        return
    if a.decompose:
        ((_, pool),) = pools([a.pool])
        table = decompose(
            pool, a.reps, a.seed, a.budget, max_share=a.max_share, shared_prior=a.shared_prior
        )
        table.insert(0, "pool", a.pool)
        table.insert(1, "budget", a.budget)
        table.insert(2, "max_share", a.max_share)
        table.insert(3, "shared_prior", a.shared_prior)
        if a.out:
            table.to_csv(a.out, mode="a", header=not Path(a.out).exists(), index=False)
        sq = table[["f1_error", "open", "complete", "normaliser"]] ** 2
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
        print("MSE", " ".join(f"{k} {v:.2e}" for k, v in sq.mean().items()))
        return
    if a.summarize:
        runs = pd.concat([pd.read_csv(p) for p in a.summarize]).drop_duplicates(
            ["config", "seed", "budget"], keep="last"
        )
        for (cfg, budget), g in runs.groupby(["config", "budget"], sort=False):
            n = len(g)
            print(
                f"{cfg} @{budget}: runs {n}, own {g.sq_own.mean():.2e}±{g.sq_own.std() / np.sqrt(n):.1e}"
                f" (median {g.sq_own.median():.1e}), balance {g.sq_balance.mean():.2e}"
                f"±{g.sq_balance.std() / np.sqrt(n):.1e} (median {g.sq_balance.median():.1e})"
            )
        return
    ((_, pool),) = pools([a.pool])
    for cfg in a.configs:
        kind, eta, decay, formula = cfg.split(",")
        st = make_strata(pool, kind, a.K)
        t = time.process_time()
        sq, sq_bal, dpl = run(
            pool,
            st,
            a.reps,
            a.seed,
            float(eta),
            decay == "1",
            a.eps,
            formula,
            runs_out=a.runs_out,
            name=f"{a.pool} {cfg}",
        )
        for label, errors in (("own weights", sq), ("balance weights", sq_bal)):
            m = errors.mean(0)
            se = errors.std(0) / np.sqrt(a.reps)
            med = np.median(errors, 0)
            print(
                f"{a.pool} {cfg} {label} K={st.n_strata} reps={a.reps} dpl={dpl:.1f} "
                + " ".join(
                    f"@{b}: {m[i]:.2e}±{se[i]:.1e} med {med[i]:.1e}" for i, b in enumerate(BUDGETS)
                )
                + f" cpu={time.process_time() - t:.0f}s",
                flush=True,
            )


if __name__ == "__main__":
    main()
