"""The Dirichlet-tree model of the oracle (Marchant & Rubinstein 2021, §4 and Appendix H, eq. 14-16).

The pool is partitioned into K strata (leaves) ordered by score, and a tree is laid over
the ordered leaves (a balanced tree of a given branching factor; branching factor K is
the one-level tree). Per label y in {0, 1} the model keeps a concentration beta_{y,v}
on every non-root node v and a global concentration alpha_y; a label y observed in leaf
k adds 1 to alpha_y and to beta_{y,v} for every node v on the path from the root to k
(eq. 15; a deterministic oracle is counted once per pair). The posterior-predictive
probability of label y for a pair of leaf k is (eq. 14)

    pi(y | k) ∝ alpha_y prod_{v on the path to k} beta_{y,v} / sum_{c in siblings(v) + v} beta_{y,c}.

Prior (Marchant & Rubinstein 2021, §5.2): beta_{y,v} = kappa depth(v)^2 + sum_{leaves k under v} s_{y,k}
(``depth_prior="additive"``) with s_{y,k} the leaf prior of label y in leaf k, or
beta_{y,v} = (1 + kappa depth(v)^2) sum_{leaves k under v} s_{y,k} (``"proportional"``:
siblings share a depth, so every prior branch probability is the ratio of the leaf priors
under the two nodes and the prior predictive of leaf k is s_{1,k} / (s_{0,k} + s_{1,k});
the depth factor only sets how hard a branch is to move);
alpha_y = sum over the root's children of beta_{y,c} (so that alpha stays the root's
total; Marchant & Rubinstein 2021 uses 1 + sum_k s_{y,k}, which differs by the root's depth terms). Deep
nodes carry large depth terms, so their branch probabilities stay near uniform and a
label informs its whole neighbourhood of the score range first, its own leaf later.

One level: with alpha the root's total the product telescopes to
pi(y | k) = beta_{y,k} / (beta_{0,k} + beta_{1,k}), i.e. an independent Beta posterior per
stratum, the oracle model of OASIS (Marchant & Rubinstein 2017, Algorithm 3).

Updates and predictions are vectorised over nodes: one label touches the O(depth) nodes
of one path; the predictive for all leaves is one gather of log branch probabilities
along the (K x depth) path matrix.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["DirichletTree", "balanced_tree"]


def balanced_tree(
    n_leaves: int, branching: int | None, groups: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """A balanced tree over ``n_leaves`` ordered leaves: returns ``parent`` (parent node of
    every node, -1 for the root, node 0) and ``leaf_node`` (node of leaf k, in order).

    Each internal node splits its contiguous range of leaves into ``branching`` nearly equal
    parts; ``branching=None`` (or >= n_leaves) gives the one-level tree (root -> leaves).
    ``groups``: sizes of consecutive runs of leaves (summing to ``n_leaves``) that the
    root splits into first, each then a balanced tree of its own (e.g. the strata of
    predicted non-matches and of predicted matches, so that no node but the root mixes
    the two); ignored for the one-level tree.
    """
    if n_leaves < 1:
        raise ValueError(f"a tree needs at least one leaf, got {n_leaves}")
    if branching is not None and branching < 2:
        raise ValueError(f"branching must be >= 2 (or None for one level), got {branching}")
    b = n_leaves if branching is None else min(branching, max(n_leaves, 2))
    parent = [-1]
    leaf_node = np.empty(n_leaves, dtype=np.int64)
    stack = [(0, 0, n_leaves)]  # (node, lo, hi)
    if groups is not None and branching is not None and len(groups) > 1:
        sizes = np.asarray(groups, dtype=np.int64)
        if np.any(sizes < 1) or int(sizes.sum()) != n_leaves:
            raise ValueError(
                f"groups must be positive sizes summing to n_leaves={n_leaves}, got {list(groups)}"
            )
        cuts = np.concatenate([[0], np.cumsum(sizes)])
        stack = []
        for a, z in zip(cuts[:-1], cuts[1:], strict=True):
            parent.append(0)
            stack.append((len(parent) - 1, int(a), int(z)))
    while stack:
        node, lo, hi = stack.pop()
        size = hi - lo
        if size == 1 and node != 0:
            leaf_node[lo] = node
            continue
        cuts = np.linspace(lo, hi, min(b, size) + 1).round().astype(int)
        for a, z in zip(cuts[:-1], cuts[1:], strict=True):
            parent.append(node)
            stack.append((len(parent) - 1, int(a), int(z)))
    return np.asarray(parent, dtype=np.int64), leaf_node


class DirichletTree:
    """Posterior of the Dirichlet-tree oracle model over K score-ordered strata.

    ``leaf_prior``: (2, K) pseudo-counts s_{y,k} of label y in leaf k (k in tree order);
    ``parent`` / ``leaf_node`` from :func:`balanced_tree`; ``depth_concentration`` kappa
    of the depth^2 term, added to (``depth_prior="additive"``) or multiplying
    (``"proportional"``) each node's prior (module docstring). ``update(k, y)`` adds a label, ``predict()`` returns
    pi(1 | k) for every leaf.
    """

    def __init__(
        self,
        leaf_prior: np.ndarray,
        parent: np.ndarray,
        leaf_node: np.ndarray,
        *,
        depth_concentration: float = 1.0,
        depth_prior: str = "additive",
    ) -> None:
        if depth_prior not in ("additive", "proportional"):
            raise ValueError(
                f"depth_prior must be 'additive' or 'proportional', got {depth_prior!r}"
            )
        leaf_prior = np.asarray(leaf_prior, dtype=np.float64)
        n_leaves = len(leaf_node)
        if leaf_prior.shape != (2, n_leaves):
            raise ValueError(f"leaf_prior must have shape (2, {n_leaves}), got {leaf_prior.shape}")
        if np.any(leaf_prior < 0) or not np.all(np.isfinite(leaf_prior)):
            raise ValueError("leaf_prior must be finite and >= 0")
        if depth_concentration < 0:
            raise ValueError(f"depth_concentration must be >= 0, got {depth_concentration}")
        n_nodes = len(parent)
        depth = np.zeros(n_nodes, dtype=np.int64)
        for v in range(1, n_nodes):  # parents precede children (built top-down)
            depth[v] = depth[parent[v]] + 1
        # path of every leaf: its ancestors below the root, padded with the dummy node
        # n_nodes whose log branch probability is 0
        max_depth = int(depth[leaf_node].max())
        paths = np.full((n_leaves, max_depth), n_nodes, dtype=np.int64)
        for k, node in enumerate(leaf_node):
            v, d = int(node), int(depth[node]) - 1
            while v > 0:
                paths[k, d] = v
                v, d = int(parent[v]), d - 1
        self.parent = np.asarray(parent, dtype=np.int64)
        self.leaf_node = np.asarray(leaf_node, dtype=np.int64)
        self.depth = depth
        self.paths = paths
        # beta on nodes 0..n_nodes (index n_nodes: dummy; index 0: root, unused)
        beta = np.zeros((2, n_nodes + 1))
        for k, path in enumerate(paths):
            nodes = path[path < n_nodes]
            beta[:, nodes] += leaf_prior[:, k : k + 1]
        depth_term = depth_concentration * depth[1:].astype(np.float64) ** 2
        if depth_prior == "additive":
            beta[:, 1:n_nodes] += depth_term
        else:
            beta[:, 1:n_nodes] *= 1.0 + depth_term
        empty = np.flatnonzero((beta[:, 1:n_nodes] <= 0).any(axis=0)) + 1
        if len(empty):
            raise ValueError(
                f"nodes {empty[:5].tolist()} get a zero prior concentration for a label "
                "(leaf prior 0 and depth_concentration 0): use a positive depth_concentration "
                "or leaf prior, or the predictive probability would be exactly 0 or 1"
            )
        beta[:, 0] = 1.0  # the root has no branch probability; kept finite for log()
        beta[:, n_nodes] = 1.0
        # parent of every node; the root and the dummy point at the dummy, whose child
        # sum stays 1, so the dummy's log branch probability is log(1 / 1) = 0
        parent_ext = np.concatenate([self.parent, [n_nodes]])
        parent_ext[0] = n_nodes
        # beta and the child sums side by side in one array, so that one label's update
        # reads and writes both with a single gather and a single scatter
        size = n_nodes + 1
        self._bc = np.zeros((2, 2 * size))
        self._bc[:, :size] = beta
        beta = self.beta = self._bc[:, :size]
        child_sum = self.child_sum = self._bc[:, size:]
        for y in (0, 1):
            np.add.at(child_sum[y], self.parent[1:], beta[y, 1:n_nodes])
        child_sum[:, n_nodes] = 1.0
        self.alpha = child_sum[:, 0].copy()
        self._parent_ext = parent_ext
        self._n_nodes = n_nodes
        # leaves under each node form a contiguous range [lo, hi) (leaves are ordered)
        real = paths < n_nodes
        leaf_ids = np.broadcast_to(np.arange(n_leaves)[:, None], paths.shape)
        self._lo = np.full(n_nodes + 1, n_leaves, dtype=np.int64)
        self._hi = np.zeros(n_nodes + 1, dtype=np.int64)
        np.minimum.at(self._lo, paths[real], leaf_ids[real])
        np.maximum.at(self._hi, paths[real], leaf_ids[real] + 1)
        self._internal = np.zeros(n_nodes + 1, dtype=bool)
        self._internal[self.parent[1:]] = True
        self._log_pred = self.log_predictive()
        # per leaf, into the side-by-side array: the entries whose change moves the log
        # predictive (beta of every path node, child sum of the internal ones), the sign
        # of that move, the leaf ranges it covers ([lo..., hi...] for one bincount), and
        # the entries a label increments (beta of the path, child sum of each parent)
        self._leaf_read, self._leaf_sign, self._leaf_ranges, self._leaf_write = [], [], [], []
        for p in paths:
            path = p[p < n_nodes]
            inner = path[self._internal[path]]
            read = np.concatenate([path, size + inner])
            self._leaf_read.append(read)
            self._leaf_sign.append(np.concatenate([np.ones(len(path)), -np.ones(len(inner))]))
            nodes = np.concatenate([path, inner])
            self._leaf_ranges.append(np.concatenate([self._lo[nodes], self._hi[nodes]]))
            self._leaf_write.append(np.concatenate([path, size + parent_ext[path]]))

    @property
    def n_leaves(self) -> int:
        return len(self.leaf_node)

    def update(self, leaf: int, label: int, count: float = 1.0) -> None:
        """Add ``count`` observations of ``label`` in ``leaf`` (eq. 15).

        Incremental: the log predictive of the leaves under a path node v changes by
        log(1 + count / beta_v) (v's own branch) minus log(1 + count / S_v) (v's child sum,
        shared by all its children); leaves under v are a contiguous range, so all
        changes are one difference array. alpha and the root's child sum change by the
        same amount and cancel.
        """
        bc = self._bc[label]
        delta = np.log1p(count / bc[self._leaf_read[leaf]])
        delta *= self._leaf_sign[leaf]
        diff = np.bincount(
            self._leaf_ranges[leaf],
            weights=np.concatenate((delta, -delta)),
            minlength=self.n_leaves + 1,
        )
        self._log_pred[label] += diff[:-1].cumsum()
        bc[self._leaf_write[leaf]] += count
        self.alpha[label] += count

    def update_many(
        self, leaves: np.ndarray, labels: np.ndarray, counts: np.ndarray | None = None
    ) -> None:
        """Add ``counts`` (default 1 each) observations per (leaf, label) pair (vectorised
        :meth:`update`)."""
        leaves = np.asarray(leaves, dtype=np.int64)
        labels = np.asarray(labels, dtype=np.int64)
        counts = np.ones(len(leaves)) if counts is None else np.asarray(counts, np.float64)
        depth = self.paths.shape[1]
        for y in (0, 1):
            mine = labels == y
            nodes = self.paths[leaves[mine]].ravel()
            weight = np.repeat(counts[mine], depth)
            real = nodes < self._n_nodes
            nodes, weight = nodes[real], weight[real]
            np.add.at(self.beta[y], nodes, weight)
            np.add.at(self.child_sum[y], self._parent_ext[nodes], weight)
            self.alpha[y] += counts[mine].sum()
        self._log_pred = self.log_predictive()

    def log_predictive(self) -> np.ndarray:
        """log of the unnormalised pi(y | k): shape (2, K)."""
        log_branch = np.log(self.beta) - np.log(self.child_sum[:, self._parent_ext])
        return np.log(self.alpha)[:, None] + log_branch[:, self.paths].sum(axis=2)

    def predict(self, out: np.ndarray | None = None) -> np.ndarray:
        """pi(1 | k) for every leaf k (posterior predictive, eq. 14), from the log
        predictive kept up to date by :meth:`update`; written into ``out`` if given."""
        lp = self._log_pred
        out = np.subtract(lp[0], lp[1], out=out)
        np.exp(out, out=out)
        out += 1.0
        return np.reciprocal(out, out=out)
