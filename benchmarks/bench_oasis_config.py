"""Which difference from the authors' `oasis` 0.1.3 package moves OASIS's F1 MSE (issue 10, item 3).

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
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_pairs import pools

from er_evaluation.pairs import stratify
from er_evaluation.pairs._stratify import Strata
from er_evaluation.pairs.samplers import OASISSampler

BUDGETS = (500, 1000, 2000)


def strata_from_alloc(alloc, scores, predicted):
    names, codes = np.unique(alloc, return_inverse=True)
    k = len(names)
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=k)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    pred = np.bincount(codes, weights=predicted.astype(float), minlength=k) / sizes
    return Strata(
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
        F, a = self.f_hat, self.alpha
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


def run(pool, strata, reps, seed0, eta, decay, eps, formula):
    labels = pool.labels.astype(np.int8)
    pred = pool.predicted.astype(float)
    truth = pool.truth()["pairwise_f1"]
    cls = PkgFormula if formula == "pkg" else OASISSampler
    sq = np.zeros((reps, len(BUDGETS)))
    dpl = 0
    for rep in range(reps):
        smp = cls(pool, seed0 + 1000 * rep, strata=strata, eta=eta, decay=decay, epsilon=eps)
        seen = np.zeros(pool.n_pairs, bool)
        nl = 0
        b = 0
        draws = 0
        sa = sh = sl = 0.0
        while b < len(BUDGETS):
            d = smp.draw()
            if not seen[d.index]:
                if nl == BUDGETS[b]:
                    F = sa / (0.5 * sh + 0.5 * sl) if sh + sl > 0 else np.nan
                    sq[rep, b] = 1.0 if not np.isfinite(F) else (F - truth) ** 2
                    b += 1
                    if b == len(BUDGETS):
                        break
                seen[d.index] = True
                nl += 1
            label = int(labels[d.index])
            lh = pred[d.index]
            w = d.weight
            sa += w * label * lh
            sh += w * lh
            sl += w * label
            smp.observe(d.index, label)
            draws += 1
        dpl += draws
    return sq, dpl / (reps * BUDGETS[-1])


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--pool", default="abt-buy")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--configs", nargs="+", default=["ours,2,0,ours"])
    ap.add_argument("--K", type=int, default=30)
    ap.add_argument("--eps", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=12345)
    a = ap.parse_args()
    ((_, pool),) = pools([a.pool])
    for cfg in a.configs:
        kind, eta, decay, formula = cfg.split(",")
        st = make_strata(pool, kind, a.K)
        t = time.process_time()
        sq, dpl = run(pool, st, a.reps, a.seed, float(eta), decay == "1", a.eps, formula)
        m = sq.mean(0)
        se = sq.std(0) / np.sqrt(a.reps)
        med = np.median(sq, 0)
        print(
            f"{a.pool} {cfg} K={st.n_strata} reps={a.reps} dpl={dpl:.1f} "
            + " ".join(
                f"@{b}: {m[i]:.2e}±{se[i]:.1e} med {med[i]:.1e}" for i, b in enumerate(BUDGETS)
            )
            + f" cpu={time.process_time() - t:.0f}s",
            flush=True,
        )
