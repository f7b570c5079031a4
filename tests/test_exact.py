"""Exact evidence: brute-force enumeration, closed forms, label symmetry, limits.

The references here are plain NumPy/SciPy and use only the plain attributes of a structure
(``nodes``, ``cardinalities``, ``hidden``, ``parents``): every completion of every ROW is
enumerated and the closed-form complete-data evidence (Beal & Ghahramani eq. 5) is summed.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

import lcbayes as lcb
from beal import ghahramani as bg

TOL = 1e-9


# ---------------------------------------------------------------------- independent references
def _codes_data(cards, n, seed, missing=0.0, columns=None):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c, n) for c in cards], axis=1)
    if missing:
        codes = np.where(rng.random(codes.shape) < missing, -1, codes)
        for j in range(codes.shape[1]):  # keep every column observed somewhere
            if (codes[:, j] < 0).all():
                codes[0, j] = 0
    return _dataset(codes, cards, columns)


def _dataset(codes, cards, columns=None):
    """A data set straight from codes (no warnings for rows with no observed value)."""
    codes = np.asarray(codes, dtype=np.int64)
    columns = tuple(columns or (f"X{j + 1}" for j in range(codes.shape[1])))
    return lcb.Dataset(codes=codes, columns=columns, labels=tuple(tuple(range(c)) for c in cards))


def _alpha_tables(structure, prior):
    """``(q_i, r_i)`` pseudo-counts per node: a number for every entry, or ``{node: value}``
    (broadcast to the CPT shape ``(*parent cards, r_i)``), 1 where unnamed."""
    tables = []
    for i, name in enumerate(structure.nodes):
        shape = (*(structure.cardinalities[p] for p in structure.parents[i]),
                 structure.cardinalities[i])
        if isinstance(prior, dict):
            value = prior.get(name, 1.0)
        else:
            value = 1.0 if prior == "dirichlet" else prior
        table = np.broadcast_to(np.asarray(value, dtype=np.float64), shape)
        tables.append(table.reshape(-1, shape[-1]))
    return tables


def _log_dirichlet_integral(alpha, counts):
    """``ln B(alpha + N) - ln B(alpha)`` summed over rows (last axis = categories)."""
    def log_b(a):
        return gammaln(a).sum(-1) - gammaln(a.sum(-1))
    return (log_b(alpha + counts) - log_b(alpha)).sum(-1)


def brute_force_log_evidence(structure, data, prior="dirichlet", sum_missing_leaves=False,
                             max_completions=300_000):
    """``ln sum_z p(z | m)`` over every completion ``z`` of the rows (eqs 5 and 9).

    Each row's hidden values and missing values of observed parents are enumerated (every
    row separately, patterns are never merged). A missing value of an observed leaf adds no
    count, unless ``sum_missing_leaves``, where it is enumerated like any other."""
    nodes, cards, parents = structure.nodes, structure.cardinalities, structure.parents
    n_nodes = len(nodes)
    has_child = {p for pa in parents for p in pa}
    codes = np.asarray(data.codes, dtype=np.int64)
    column = {name: j for j, name in enumerate(data.columns)}
    n = codes.shape[0]
    fixed = np.full((n, n_nodes), -1, dtype=np.int64)  # -1: enumerate, -2: adds no count
    for i in range(n_nodes):
        if not structure.hidden[i]:
            fixed[:, i] = codes[:, column[nodes[i]]]
            if not sum_missing_leaves and i not in has_child:
                fixed[fixed[:, i] < 0, i] = -2
    free = np.argwhere(fixed == -1)  # (row, node) pairs
    free_cards = [cards[i] for _, i in free]
    total = math.prod(free_cards)
    assert total <= max_completions, f"{total} completions: too many for the reference"
    alphas = _alpha_tables(structure, prior)
    out = []
    block = 1 << 14
    for start in range(0, total, block):
        index = np.arange(start, min(total, start + block))
        states = np.broadcast_to(fixed, (index.size, n, n_nodes)).copy()
        if free_cards:
            digits = np.unravel_index(index, free_cards)
            for k, (r, i) in enumerate(free):
                states[:, r, i] = digits[k]
        log_p = np.zeros(index.size)
        for i in range(n_nodes):
            r_i = cards[i]
            q_i = math.prod(cards[p] for p in parents[i])
            config = (np.ravel_multi_index(tuple(states[:, :, p] for p in parents[i]),
                                           [cards[p] for p in parents[i]])
                      if parents[i] else np.zeros((index.size, n), dtype=np.int64))
            value = states[:, :, i]
            used = value >= 0
            flat = (np.arange(index.size)[:, None] * (q_i * r_i) + config * r_i + value)[used]
            counts = np.bincount(flat, minlength=index.size * q_i * r_i)
            log_p += _log_dirichlet_integral(alphas[i], counts.reshape(index.size, q_i, r_i))
        out.append(log_p)
    return float(logsumexp(np.concatenate(out)))


def _compositions(c, k):
    """All ways to split ``c`` identical rows over ``k`` classes."""
    return np.array([v for v in itertools.product(range(c + 1), repeat=k) if sum(v) == c],
                    dtype=np.int64)


def pattern_split_log_evidence(data, n_classes, max_terms=3_000_000):
    """Latent class evidence (pseudo-counts 1, complete data) by a second route: for every
    distinct pattern seen ``c`` times, every split ``(n_1 .. n_K)`` of its rows over the classes
    stands for ``c! / prod n_k!`` row completions with the same counts."""
    patterns, counts = data.patterns.astype(np.int64), data.counts.astype(np.int64)
    assert (patterns >= 0).all()
    cards = [len(labels) for labels in data.labels]
    comps = [_compositions(int(c), n_classes) for c in counts]
    sizes = [len(c) for c in comps]
    total = math.prod(sizes)
    assert total <= max_terms
    onehot = [np.eye(r)[patterns[:, j]] for j, r in enumerate(cards)]  # (P, r_j) each
    out = []
    block = 1 << 16
    for start in range(0, total, block):
        index = np.unravel_index(np.arange(start, min(total, start + block)), sizes)
        split = np.stack([comps[p][index[p]] for p in range(len(comps))], axis=2)  # (B, K, P)
        split = split.astype(np.float64)
        log_w = (gammaln(counts + 1.0).sum() - gammaln(split + 1.0).sum(axis=(1, 2)))
        log_p = _log_dirichlet_integral(np.ones(n_classes), split.sum(axis=2)[:, None, :])
        for oh in onehot:  # (B, K, r_j) counts of item j's categories within each class
            log_p += _log_dirichlet_integral(np.ones(oh.shape[1]), split @ oh)
        out.append(log_w + log_p)
    return float(logsumexp(np.concatenate(out)))


# ---------------------------------------------------------------------- brute force
def _lc(n_classes, cards, n, seed, missing=0.0):
    data = _codes_data(cards, n, seed, missing)
    return lcb.latent_class(data, n_classes), data


def _hlc(n, seed, missing=0.0):
    data = _codes_data((2, 3, 2, 2), n, seed, missing, columns=("A", "B", "C", "D"))
    return lcb.hlc(data, {"H": ["H1", "A", "B"], "H1": ["C", "D"]}, {"H": 2, "H1": 2}), data


def _two_hidden_parents(n, seed, missing=0.0):
    data = _codes_data((2, 3, 2, 2), n, seed, missing, columns=("y1", "y2", "y3", "y4"))
    parents = {"y1": ["s1"], "y2": ["s1", "s2"], "y3": ["s2"], "y4": ["s1", "s2"]}
    return lcb.dag(data, parents=parents, hidden={"s1": 2, "s2": 2}), data


def _observed_parent(n, seed, missing=0.0):
    """A -> B <- H -> C -> D: A and C are observed parents whose values may be missing."""
    data = _codes_data((2, 2, 3, 2), n, seed, missing, columns=("A", "B", "C", "D"))
    parents = {"B": ["A", "H"], "C": ["H"], "D": ["C"]}
    return lcb.dag(data, parents=parents, hidden={"H": 2}), data


CASES = {
    "lc2_binary_8rows": (lambda: _lc(2, (2, 2, 2, 2), 8, 0), "dirichlet"),
    "lc2_binary_8rows_missing": (lambda: _lc(2, (2, 2, 2, 2), 8, 1, 0.25), "dirichlet"),
    "lc3_ternary_6rows": (lambda: _lc(3, (3, 3, 3), 6, 2), "dirichlet"),
    "lc3_ternary_7rows_missing_prior_half": (lambda: _lc(3, (3, 3, 3), 7, 3, 0.3), 0.5),
    "lc2_mixed_5rows_missing_node_prior": (
        lambda: _lc(2, (2, 3, 2), 5, 4, 0.2),
        {"class": [0.7, 2.5], "X1": [[1.0, 3.0], [0.5, 0.5]], "X2": 2.0}),
    "hlc_6rows": (lambda: _hlc(6, 5), "dirichlet"),
    "hlc_6rows_missing_prior_half": (lambda: _hlc(6, 6, 0.25), 0.5),
    "dag_two_hidden_parents_6rows": (lambda: _two_hidden_parents(6, 7), "dirichlet"),
    "dag_two_hidden_parents_6rows_missing_node_prior": (
        lambda: _two_hidden_parents(6, 8, 0.25),
        {"s1": [3.0, 1.0], "y2": 0.5, "y4": [[[1.0, 2.0], [2.0, 1.0]], [[0.3, 0.3], [4.0, 1.0]]]}),
    "dag_observed_parent_sometimes_missing_6rows": (lambda: _observed_parent(6, 9, 0.3),
                                                    "dirichlet"),
    "dag_observed_parent_sometimes_missing_6rows_prior": (
        lambda: _observed_parent(6, 10, 0.35), {"A": [2.0, 0.5], "C": 0.5, "B": 1.5}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_exact_evidence_matches_brute_force_enumeration_of_row_completions(case):
    make, prior = CASES[case]
    structure, data = make()
    truth = brute_force_log_evidence(structure, data, prior)
    result = lcb.exact_evidence(structure, data, prior=prior)
    assert result.log_evidence == pytest.approx(truth, abs=TOL)
    assert result.method == "sufficient-statistics DP"
    assert 1 <= result.n_terms <= result.estimated_terms * (1 + 1e-9)


def test_exact_evidence_matches_brute_force_when_observed_rows_fix_some_parent_counts():
    """Rows whose observed values have no hidden or missing ancestor have a single completion,
    yet they add counts to CPT rows that other rows (with the parent missing) leave free."""
    data = _dataset([[0, 1, -1], [1, 0, -1], [-1, 1, 0], [-1, 0, 1], [0, -1, 1], [1, 1, 1]],
                    (2, 2, 2), ("A", "B", "C"))
    structure = lcb.dag(data, parents={"B": ["A"], "C": ["H"]}, hidden={"H": 2})
    truth = brute_force_log_evidence(structure, data, {"A": [1.0, 2.0], "B": 0.5})
    result = lcb.exact_evidence(structure, data, prior={"A": [1.0, 2.0], "B": 0.5})
    assert result.log_evidence == pytest.approx(truth, abs=TOL)

    no_hidden = lcb.dag(data, parents={"B": ["A"]}, hidden={})
    truth = brute_force_log_evidence(no_hidden, data)
    assert lcb.exact_evidence(no_hidden, data).log_evidence == pytest.approx(truth, abs=TOL)


@pytest.mark.parametrize("case", ["lc2_binary_8rows_missing",
                                  "dag_observed_parent_sometimes_missing_6rows"])
def test_missing_leaf_values_sum_out_exactly(case):
    """Enumerating the missing leaf values too (not dropping their counts) gives the same sum."""
    make, prior = CASES[case]
    structure, data = make()
    truth = brute_force_log_evidence(structure, data, prior, sum_missing_leaves=True,
                                     max_completions=2_000_000)
    assert lcb.exact_evidence(structure, data, prior=prior).log_evidence == pytest.approx(
        truth, abs=TOL)


# ---------------------------------------------------------------------- closed forms
def _dirichlet_multinomial_columns(data, alpha=1.0):
    """``sum_j ln DM(N_j | alpha)`` over the columns, missing values skipped."""
    total = 0.0
    for j, labels in enumerate(data.labels):
        col = np.asarray(data.codes)[:, j]
        counts = np.bincount(col[col >= 0], minlength=len(labels))
        r = len(labels)
        total += (gammaln(r * alpha) - gammaln(r * alpha + counts.sum())
                  + (gammaln(alpha + counts) - gammaln(alpha)).sum())
    return float(total)


@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_one_class_model_is_product_of_independent_dirichlet_multinomials(missing):
    data = _codes_data((2, 3, 4, 2), 50, 11, missing)
    structure = lcb.latent_class(data, 1)
    result = lcb.exact_evidence(structure, data)
    assert result.log_evidence == pytest.approx(_dirichlet_multinomial_columns(data), abs=TOL)
    assert result.method == "closed form"
    assert result.n_terms == 1
    half = lcb.exact_evidence(structure, data, prior=0.5).log_evidence
    assert half == pytest.approx(_dirichlet_multinomial_columns(data, 0.5), abs=TOL)


@pytest.mark.parametrize("n_rows", [1, 7, 60, 500])
def test_empty_beal_structure_has_the_closed_form_of_notes_item_11(n_rows):
    """Notes §9 item 11: sum_j [lnG(5) - lnG(5 + n_j) + sum_k lnG(1 + N_jk)]."""
    rng = np.random.default_rng(n_rows)
    codes = rng.integers(0, 5, size=(n_rows, 4))
    if n_rows > 1:
        codes = np.where(rng.random(codes.shape) < 0.1, -1, codes)
        codes[0] = 0
    data = lcb.Dataset(codes=codes, columns=bg.OBSERVED, labels=(tuple(range(5)),) * 4)
    structure = bg.structure_from_codes((0, 0, 0, 0), data)
    result = lcb.exact_evidence(structure, data)
    truth = 0.0
    for j in range(4):
        col = codes[:, j][codes[:, j] >= 0]
        counts = np.bincount(col, minlength=5)
        truth += gammaln(5) - gammaln(5 + col.size) + gammaln(1 + counts).sum()
    assert result.log_evidence == pytest.approx(truth, abs=TOL)
    assert result.method == "closed form"
    assert result.n_terms == 1


# ---------------------------------------------------------------------- label symmetry
def test_one_row_evidence_is_uniform_prior_predictive_for_any_number_of_classes():
    """E[sum_k pi_k prod_j theta_jk(y_j)] = prod_j 1/r_j: every labelling counted once, no
    ln K! to add or subtract."""
    data = _dataset([[1, 0, 2]], (2, 3, 4))
    for k in (1, 2, 3, 5):
        result = lcb.exact_evidence(lcb.latent_class(data, k), data)
        assert result.log_evidence == pytest.approx(-math.log(2 * 3 * 4), abs=TOL)


def test_two_row_evidence_matches_hand_computed_dirichlet_moments():
    """p(y1, y2) = sum_{k,k'} E[pi_k pi_k'] E[prod_j theta_jk(y1j) theta_jk'(y2j)] with
    E[pi_k pi_k'] = (1 + [k = k']) / (K (K + 1)) and, within one class, E[theta_a theta_b] =
    (1 + [a = b]) / (r (r + 1)) (uniform Dirichlet moments)."""
    y1, y2 = (1, 0, 2), (1, 2, 2)
    cards = (2, 3, 4)
    data = _dataset([y1, y2], cards)
    for k in (2, 3, 4):
        same = np.prod([(1 + (a == b)) / (r * (r + 1))
                        for a, b, r in zip(y1, y2, cards, strict=True)])
        different = np.prod([1.0 / r**2 for r in cards])
        truth = k * 2 / (k * (k + 1)) * same + k * (k - 1) / (k * (k + 1)) * different
        result = lcb.exact_evidence(lcb.latent_class(data, k), data)
        assert result.log_evidence == pytest.approx(math.log(truth), abs=TOL)


def test_relabelling_classes_in_an_asymmetric_prior_changes_nothing():
    """The sum covers every labelling, so permuting the class axis of every prior table (class
    shares and class-conditional pseudo-counts together) leaves the evidence unchanged."""
    structure, data = _lc(3, (2, 3, 2), 10, 21, 0.15)
    rng = np.random.default_rng(0)
    prior = {"class": np.array([0.5, 1.0, 3.0])}
    for name in data.columns:
        prior[name] = rng.uniform(0.3, 3.0, size=structure.cpt_shape(structure.index(name)))
    base = lcb.exact_evidence(structure, data, prior=prior).log_evidence
    assert base == pytest.approx(brute_force_log_evidence(structure, data, prior), abs=TOL)
    for perm in ([1, 0, 2], [2, 0, 1]):
        permuted = {name: value[perm] for name, value in prior.items()}
        again = lcb.exact_evidence(structure, data, prior=permuted).log_evidence
        assert again == pytest.approx(base, abs=TOL)


@pytest.mark.parametrize(("n_classes", "n_rows", "seed"), [(2, 40, 45), (3, 15, 4)])
def test_fast_cases_agree_with_a_per_pattern_split_and_ignore_row_order(n_classes, n_rows, seed):
    """The module's "fast" sizes: complete binary data, 2 classes x 40 rows or 3 x 15. Second
    route: enumerate every split of each distinct pattern's rows over the classes."""
    data = _codes_data((2, 2, 2), n_rows, seed)
    structure = lcb.latent_class(data, n_classes)
    result = lcb.exact_evidence(structure, data)
    assert result.log_evidence == pytest.approx(pattern_split_log_evidence(data, n_classes),
                                                abs=TOL)
    assert result.seconds < 30.0
    # the second route itself agrees with the row-by-row brute force on the first rows
    head = _dataset(np.asarray(data.codes)[:8], (2, 2, 2))
    assert pattern_split_log_evidence(head, n_classes) == pytest.approx(
        brute_force_log_evidence(lcb.latent_class(head, n_classes), head, max_completions=7000),
        abs=TOL)
    # the evidence of an exchangeable sequence does not depend on the order of the rows
    order = np.random.default_rng(seed).permutation(n_rows)
    shuffled = _dataset(np.asarray(data.codes)[order], (2, 2, 2))
    again = lcb.exact_evidence(lcb.latent_class(shuffled, n_classes), shuffled).log_evidence
    assert again == pytest.approx(result.log_evidence, abs=TOL)


# ---------------------------------------------------------------------- rows with no value
@pytest.mark.parametrize("case", ["lc3_ternary_7rows_missing_prior_half", "hlc_6rows",
                                  "dag_observed_parent_sometimes_missing_6rows"])
def test_rows_with_no_observed_value_contribute_a_factor_of_one(case):
    make, prior = CASES[case]
    structure, data = make()
    codes = np.asarray(data.codes)
    blank = np.full((3, codes.shape[1]), -1)
    padded = lcb.Dataset(codes=np.concatenate([blank[:1], codes, blank[1:]]),
                         columns=data.columns, labels=data.labels)
    base = lcb.exact_evidence(structure, data, prior=prior).log_evidence
    padded_result = lcb.exact_evidence(structure, padded, prior=prior)
    assert padded_result.log_evidence == pytest.approx(base, abs=TOL)
    if case == "hlc_6rows":  # the reference enumerates the blank rows' hidden values too
        truth = brute_force_log_evidence(structure, padded, prior, max_completions=300_000)
        assert padded_result.log_evidence == pytest.approx(truth, abs=TOL)


# ---------------------------------------------------------------------- limits
def _binomial_bound(data, n_states):
    """prod over patterns of C(c + S - 1, S - 1) (complete data: S = n_states everywhere)."""
    return math.prod(math.comb(int(c) + n_states - 1, n_states - 1) for c in data.counts)


def test_too_large_problems_raise_with_the_estimated_terms_and_a_pointer_to_vbem_and_ais():
    structure, data = _lc(2, (2, 2, 2), 40, 31)
    with pytest.raises(lcb.TooLargeError) as info:
        lcb.exact_evidence(structure, data, max_terms=100)
    message = str(info.value)
    assert "lcb.vbem" in message and "AIS" in message
    estimate = float(re.search(r"about ([0-9.e+]+)", message).group(1))
    assert 100 < estimate <= _binomial_bound(data, 2)
    # the same problem with room to spare: the estimate is the one reported, and bounds n_terms
    result = lcb.exact_evidence(structure, data, max_terms=10 * estimate)
    assert result.estimated_terms == pytest.approx(estimate, rel=6e-3)
    assert result.n_terms <= result.estimated_terms * (1 + 1e-9)

    big, big_data = _lc(4, (2,) * 8, 300, 3, 0.1)
    with pytest.raises(lcb.TooLargeError, match=r"lcb.vbem.*AIS"):
        lcb.exact_evidence(big, big_data)


def test_improper_prior_is_refused():
    structure, data = _lc(2, (2, 2), 5, 0)
    with pytest.raises(lcb.StructureError, match="prior"):
        lcb.exact_evidence(structure, data, prior=None)


INTERNAL_CASES = {
    "lc2_binary_12rows_repeated_patterns_missing": (lambda: _lc(2, (2, 2, 2), 12, 41, 0.1), 0.5),
    "dag_observed_parent_sometimes_missing_6rows_prior":
        CASES["dag_observed_parent_sometimes_missing_6rows_prior"],
}


@pytest.mark.parametrize("case", sorted(INTERNAL_CASES))
def test_exact_evidence_does_not_depend_on_batching_chunking_or_key_packing(case, monkeypatch):
    """Tiny internal limits force every alternative route: patterns split into batches, the DP
    convolved in chunks, keys spread over many int64 words, CPT rows evaluated on their
    distinct count vectors instead of a dense grid, in blocks."""
    from lcbayes.engines import exact_dp

    make, prior = INTERNAL_CASES[case]
    structure, data = make()
    assert data.counts.max() >= 3 or case.startswith("dag")
    truth = brute_force_log_evidence(structure, data, prior)
    monkeypatch.setattr(exact_dp, "_MAX_COMPOSITIONS", 2)
    monkeypatch.setattr(exact_dp, "_CHUNK", 64)
    monkeypatch.setattr(exact_dp, "_WORD", 1 << 5)
    monkeypatch.setattr(exact_dp, "_MAX_GRID", 1)
    monkeypatch.setattr(exact_dp, "_EVAL_BLOCK", 1000)
    assert lcb.exact_evidence(structure, data, prior=prior).log_evidence == pytest.approx(
        truth, abs=TOL)
