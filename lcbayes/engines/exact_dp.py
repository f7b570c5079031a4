"""The dynamic programme behind :func:`lcbayes.exact_evidence` (its module docstring
states the method): per-pattern count increments, the lattice of reachable complete-data count
tables, their exact mixed-radix keys, and the merge of completions reaching one table."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.special import gammaln

from ..data import Dataset
from ..errors import TooLargeError
from ..structure import Structure

__all__ = ["CountTablePlan", "PatternIncrements", "log_beta", "pattern_increments",
           "too_large_error"]

#: Most compositions of one batch of identical rows (larger patterns are split into batches).
_MAX_COMPOSITIONS = 20_000
#: Most candidate (count table, composition) pairs held in memory at once.
_CHUNK = 1 << 22
#: Count tables evaluated per block in the final sum.
_EVAL_BLOCK = 1 << 20
#: Largest grid of possible counts of one CPT row tabulated densely.
_MAX_GRID = 1 << 20
#: Every key word stays below this, so sums of keys never overflow int64.
_WORD = 1 << 62
#: Most increment entries (sum over patterns of joint free states x count coordinates).
MAX_INCREMENT_ENTRIES = 50_000_000


def log_beta(alpha: np.ndarray) -> np.ndarray:
    """``sum_k ln Gamma(alpha_k) - ln Gamma(sum_k alpha_k)`` over the last axis (as
    :func:`lcbayes.engines.dirichlet.log_beta`, in NumPy: the shapes change with every row and
    data set, so a jitted version would recompile for each)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    return gammaln(alpha).sum(-1) - gammaln(alpha.sum(-1))


def too_large_error(structure: Structure, data: Dataset, estimate: float, max_terms: float
               ) -> TooLargeError:
    hidden = ", ".join(f"{structure.nodes[i]}:{structure.cardinalities[i]}"
                       for i in structure.hidden_nodes) or "none"
    return TooLargeError(
        f"the exact evidence would sum up to about {estimate:.3g} distinct complete-data count "
        f"tables, more than max_terms={max_terms:.3g}: {structure.kind} structure with hidden "
        f"nodes ({hidden}), {len(structure.observed_nodes)} observed nodes and "
        f"{structure.n_parameters} parameters, on {data.n_rows} rows ({data.n_patterns} "
        "patterns). Use lcb.vbem (a lower bound) or an AIS estimate instead, or fewer "
        "rows, or raise max_terms (the figure is an upper bound)"
    )


# ---------------------------------------------------------------------- per-pattern increments
@dataclass
class PatternIncrements:
    """One data pattern: the counts a row adds in each of its joint free states, and its rows."""

    increments: np.ndarray  # (S, D): the counts one row adds in each of its S joint free states
    count: int

    @property
    def n_states(self) -> int:
        return int(self.increments.shape[0])

    @property
    def log_compositions(self) -> float:
        """``ln C(c + S - 1, S - 1)``."""
        c, s = self.count, self.n_states
        return float(gammaln(c + s) - gammaln(c + 1) - gammaln(s))


def pattern_increments(structure: Structure, data: Dataset, max_terms: float
                       ) -> tuple[list[PatternIncrements], np.ndarray]:
    """Count increments of every data pattern with at least one observed value, and the offset
    of every node's flattened ``(q_i, r_i)`` table in a count vector (a
    :class:`~lcbayes.TooLargeError` when one pattern alone has more joint free states than
    ``max_terms``, or the increments would not fit in memory)."""
    sizes = [structure.n_configs(i) * structure.cardinalities[i] for i in range(structure.n_nodes)]
    offsets = np.cumsum([0, *sizes])
    n_coords = int(offsets[-1])
    column = {i: j for j, i in enumerate(structure.observed_nodes)}
    plans = []
    for row, count in zip(data.patterns, data.counts, strict=True):
        seen = [i for i, j in column.items() if row[j] >= 0]
        if seen and count > 0:
            active = _ancestral_set(structure, seen)
            free = [i for i in active if structure.hidden[i] or row[column[i]] < 0]
            plans.append((row, round(count), seen, active, free))
    n_states = [math.prod(structure.cardinalities[i] for i in free) for *_, free in plans]
    if max(n_states, default=1) > max_terms or sum(n_states) * n_coords > MAX_INCREMENT_ENTRIES:
        raise too_large_error(structure, data, float(sum(n_states)), max_terms)
    patterns = []
    for (row, count, seen, active, free), s in zip(plans, n_states, strict=True):
        values = np.zeros((s, structure.n_nodes), dtype=np.int64)
        for i in seen:
            values[:, i] = row[column[i]]
        if free:
            cards = [structure.cardinalities[i] for i in free]
            values[:, free] = np.indices(cards).reshape(len(free), -1).T
        inc = np.zeros((s, n_coords), dtype=np.int64)
        for i in active:
            pa = structure.parents[i]
            config = (np.ravel_multi_index(tuple(values[:, q] for q in pa),
                                           structure.parent_cardinalities(i)) if pa else 0)
            inc[np.arange(s), offsets[i] + config * structure.cardinalities[i] + values[:, i]] += 1
        patterns.append(PatternIncrements(inc, count))
    return patterns, offsets


def _ancestral_set(structure: Structure, nodes: list[int]) -> list[int]:
    """The given nodes and all their ancestors, in node order."""
    seen = set(nodes)
    stack = list(nodes)
    while stack:
        for p in structure.parents[stack.pop()]:
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return sorted(seen)


# ---------------------------------------------------------------------- the plan
class CountTablePlan:
    """The lattice of reachable count tables, its key packing and the DP over it."""

    def __init__(self, structure: Structure, patterns: list[PatternIncrements], offsets: np.ndarray
                 ) -> None:
        self.structure = structure
        self.offsets = offsets
        n_coords = int(offsets[-1])
        self.patterns = sorted(patterns, key=lambda p: p.log_compositions)
        self.log_completions = float(sum(p.count * math.log(p.n_states) for p in patterns))
        # every count table = base + sum_p sum_s n_ps (v_ps - v_p0)
        self.base = np.zeros(n_coords, dtype=np.int64)
        self.hi = np.zeros(n_coords, dtype=np.int64)
        self.lo = np.zeros(n_coords, dtype=np.int64)
        for p in patterns:
            self.base += p.count * p.increments[0]
            self.hi += p.count * p.increments.max(axis=0)
            self.lo += p.count * p.increments.min(axis=0)
        diffs = [p.increments[1:] - p.increments[0] for p in patterns if p.n_states > 1]
        self.closed_form = not diffs
        if self.closed_form:
            self.basis = np.zeros(0, dtype=np.int64)
            self.lift = np.zeros((0, n_coords))
        else:
            self.basis, self.lift = _lattice_basis(np.concatenate(diffs))
        # the DP keys hold the basis counts themselves, which only grow from 0 to hi
        self.radix = self.hi[self.basis] + 1
        self.mult, self.word = _pack(self.radix)
        self.n_words = int(self.word.max()) + 1 if self.basis.size else 1

    def log10_bound(self) -> float:
        """log10 of an upper bound on the number of distinct count tables."""
        if self.closed_form:
            return 0.0
        naive = sum(p.log_compositions for p in self.patterns)
        box = float(np.log((self.hi - self.lo)[self.basis] + 1.0).sum())
        return min(naive, box) / math.log(10)

    # -------------------------------------------------------------- the DP
    def _keys(self, coords: np.ndarray) -> np.ndarray:
        """``(K, n_words)`` int64 keys of ``(K, n_basis)`` basis counts (or count increments)."""
        out = np.zeros((coords.shape[0], self.n_words), dtype=np.int64)
        for w in range(self.n_words):
            sel = self.word == w
            out[:, w] = coords[:, sel] @ self.mult[sel]
        return out

    def run(self) -> tuple[np.ndarray, np.ndarray]:
        """Distinct count tables (as keys) and the log number of completions reaching each."""
        # rows with a single completion add the same counts to every table, also on basis
        # coordinates (an observed parent that is missing in other rows): start from them, so
        # that the keys decode to the full basis counts ``base_I + D_I``
        fixed = sum((p.count * p.increments[0, self.basis] for p in self.patterns
                     if p.n_states == 1), np.zeros(self.basis.size, dtype=np.int64))
        keys = self._keys(fixed[None, :])
        log_w = np.zeros(1)
        for p in self.patterns:
            if p.n_states == 1:
                continue  # a single completion: its counts are in ``fixed`` and ``base``
            inc = p.increments[:, self.basis]
            for batch in _batches(p.count, p.n_states):
                comps = _compositions(batch, p.n_states)
                log_coef = gammaln(batch + 1.0) - gammaln(comps + 1.0).sum(axis=1)
                inc_keys, inc_w = _merge(self._keys(comps @ inc), log_coef)
                keys, log_w = _convolve(keys, log_w, inc_keys, inc_w)
        return keys, log_w

    # -------------------------------------------------------------- eq. 5 for every table
    def _decode(self, keys: np.ndarray) -> np.ndarray:
        """``(M, n_basis)`` basis counts of the keys."""
        coords = np.empty((keys.shape[0], self.basis.size), dtype=np.int64)
        for d in range(self.basis.size):
            coords[:, d] = (keys[:, self.word[d]] // self.mult[d]) % self.radix[d]
        return coords

    def log_complete_evidence(self, keys: np.ndarray, alphas) -> np.ndarray:
        """``ln p(z | m)`` (eq. 5) of every count table, summed over the CPT rows.

        A CPT row's counts are affine in the basis counts, ``N = base + (x - base_I) L``, so its
        index in the grid of its possible counts is one more affine map of ``x``."""
        s = self.structure
        constant = 0.0
        dense = []   # (coefficients (n_basis,), offset, table of values)
        sparse = []  # (columns, alpha row)
        for i in range(s.n_nodes):
            r = s.cardinalities[i]
            for row in range(s.n_configs(i)):
                cols = self.offsets[i] + row * r + np.arange(r)
                alpha = np.asarray(alphas[i][row], dtype=np.float64)
                if not self.lift[:, cols].any():  # the same counts in every table
                    counts = self.base[cols]
                    constant += float(log_beta(alpha + counts) - log_beta(alpha))
                    continue
                radix = self.hi[cols] - self.lo[cols] + 1
                if np.prod(radix.astype(np.float64)) > _MAX_GRID:
                    sparse.append((cols, alpha))
                    continue
                grid = np.indices(tuple(radix.tolist())).reshape(r, -1).T + self.lo[cols]
                table = np.asarray(log_beta(alpha + grid)) - float(log_beta(alpha))
                mult = np.cumprod(np.concatenate([[1], radix[:0:-1]]))[::-1]  # C order
                coef = self.lift[:, cols] @ mult
                offset = float((self.base[cols] - self.lo[cols]) @ mult
                               - self.base[self.basis] @ coef)
                dense.append((coef, offset, table))
        out = np.full(keys.shape[0], constant)
        if not dense and not sparse:
            return out
        coefs = np.stack([c for c, _, _ in dense], axis=1) if dense else None
        offsets = np.array([o for _, o, _ in dense])
        for start in range(0, keys.shape[0], _EVAL_BLOCK):
            x = self._decode(keys[start:start + _EVAL_BLOCK]).astype(np.float64)
            acc = out[start:start + x.shape[0]]
            if coefs is not None:  # there are dense tables
                index = np.rint(x @ coefs + offsets).astype(np.int64)
                for k, (_, _, table) in enumerate(dense):
                    acc += table[index[:, k]]
            for cols, alpha in sparse:
                shift = x - self.base[self.basis]
                counts = self.base[cols] + np.rint(shift @ self.lift[:, cols]).astype(np.int64)
                uniq, inverse = np.unique(counts, axis=0, return_inverse=True)
                values = np.asarray(log_beta(alpha + uniq)) - float(log_beta(alpha))
                acc += values[inverse.reshape(-1)]
        return out


def _lattice_basis(diffs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates ``I`` spanning the rows of ``diffs`` and the lift ``L`` with ``u = u_I L``
    for every ``u`` in their span."""
    dm = diffs.astype(np.float64)
    _, r, piv = scipy.linalg.qr(dm, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int((diag > 1e-9 * max(float(diag[0]), 1.0)).sum())
    basis = np.sort(piv[:rank])
    lift, *_ = np.linalg.lstsq(dm[:, basis], dm, rcond=None)
    if not np.allclose(dm[:, basis] @ lift, dm, atol=1e-8):  # pragma: no cover - defensive
        raise RuntimeError("the lattice basis of the count increments is inconsistent")
    lift[np.abs(lift) < 1e-12] = 0.0
    return basis, lift


def _pack(radix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mixed-radix multiplier and word of each coordinate (every word stays below 2**62)."""
    mult = np.zeros(radix.size, dtype=np.int64)
    word = np.zeros(radix.size, dtype=np.int64)
    w, m = 0, 1
    for d, rad in enumerate(radix.tolist()):
        if m * rad > _WORD:
            w, m = w + 1, 1
        mult[d], word[d] = m, w
        m *= rad
    return mult, word


def _batches(count: int, n_states: int) -> list[int]:
    """Split ``count`` identical rows into batches of few compositions each (the batches'
    multinomial coefficients multiply to the whole pattern's by Vandermonde's identity)."""
    b = count
    while b > 1 and math.comb(b + n_states - 1, n_states - 1) > _MAX_COMPOSITIONS:
        b //= 2
    return [b] * (count // b) + ([count % b] if count % b else [])


def _compositions(c: int, s: int) -> np.ndarray:
    """All ``(n_1 .. n_s)`` with ``n_i >= 0`` summing to ``c``: a ``(C(c+s-1, s-1), s)`` array
    (stars and bars)."""
    if s == 1:
        return np.array([[c]], dtype=np.int64)
    bars = np.array(list(itertools.combinations(range(c + s - 1), s - 1)), dtype=np.int64)
    ends = np.ones((bars.shape[0], 1), dtype=np.int64)
    edges = np.concatenate([-ends, bars, (c + s - 1) * ends], axis=1)
    return np.diff(edges, axis=1) - 1


def _merge(keys: np.ndarray, log_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys (sorted) with the log-sum-exp of their weights."""
    if keys.shape[0] <= 1:
        return keys, log_w
    order = np.argsort(keys[:, 0]) if keys.shape[1] == 1 else np.lexsort(keys.T[::-1])
    keys, log_w = keys[order], log_w[order]
    starts = np.flatnonzero(np.concatenate([[True], np.any(keys[1:] != keys[:-1], axis=1)]))
    top = np.maximum.reduceat(log_w, starts)
    sizes = np.diff(np.append(starts, keys.shape[0]))
    total = np.add.reduceat(np.exp(log_w - np.repeat(top, sizes)), starts)
    return keys[starts], top + np.log(total)


def _convolve(keys, log_w, inc_keys, inc_w):
    """Every count table plus every increment, merged."""
    per = max(1, _CHUNK // inc_keys.shape[0])
    parts = []
    for start in range(0, keys.shape[0], per):
        k = (keys[start:start + per, None, :] + inc_keys[None, :, :]).reshape(-1, keys.shape[1])
        w = (log_w[start:start + per, None] + inc_w[None, :]).reshape(-1)
        parts.append(_merge(k, w))
    if len(parts) == 1:
        return parts[0]
    return _merge(np.concatenate([k for k, _ in parts]), np.concatenate([w for _, w in parts]))
