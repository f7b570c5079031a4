"""The evidence policy (lcbayes.comparison.policy): two estimates combined where they agree,
the union of their intervals where they do not, the VB bound never a candidate's evidence, and
the documentation's table generated from the policy."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from lcbayes.comparison import registry
from lcbayes.comparison.policy import DISAGREE_SE, ROLES, choose_evidence, combine, trust_table

DOCS = Path(__file__).resolve().parents[1] / "docs" / "guide" / "evidence.md"


def test_agreeing_estimates_are_weighted_by_their_precision():
    value, se, agree = combine((-10.0, 0.1), (-10.1, 0.2))
    assert agree
    assert value == pytest.approx((-10.0 / 0.01 - 10.1 / 0.04) / (1 / 0.01 + 1 / 0.04))
    assert se == pytest.approx(1.0 / math.sqrt(1 / 0.01 + 1 / 0.04))


def test_disagreeing_estimates_get_the_union_of_their_intervals():
    value, se, agree = combine((-10.0, 0.1), (-12.0, 0.1))
    assert not agree and abs(10.0 + 12.0) > DISAGREE_SE * math.hypot(0.1, 0.1)
    z = 1.959963984540054
    assert value - z * se == pytest.approx(-12.0 - z * 0.1)
    assert value + z * se == pytest.approx(-10.0 + z * 0.1)


def test_one_missing_estimate_leaves_the_other():
    assert combine((math.nan, math.nan), (-5.0, 0.2)) == (-5.0, 0.2, True)
    assert combine((-5.0, 0.2), (math.nan, math.nan)) == (-5.0, 0.2, True)


def test_the_vb_bound_is_never_a_candidates_evidence():
    assert "vbem" not in ROLES and registry.method("vbem").evidence is None
    row = {"elbo": -10.0, "elbo_corrected": -9.0}
    assert choose_evidence(row, [])[1] == "none"
    row["smc_evidence"], row["smc_evidence_stderr"] = -8.0, 0.1
    assert choose_evidence(row, []) == (-8.0, "smc", 0.1)
    assert choose_evidence(row, ["smc_below_vbem"])[1] == "none"   # vetoed


def test_the_built_in_methods_read_their_roles_from_the_policy():
    for name, role in ROLES.items():
        assert registry.method(name).evidence is role


def test_the_guide_prints_the_policys_table():
    assert trust_table() in DOCS.read_text(encoding="utf-8")
    assert np.all([f"`{name}`" in trust_table() for name in ROLES])


def test_the_evidence_page_opens_with_the_trust_table():
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    first_table = next(i for i, line in enumerate(lines) if line.startswith("|"))
    first_section = next(i for i, line in enumerate(lines) if line.startswith("## "))
    assert lines[first_table] == trust_table().splitlines()[0]
    assert first_table < first_section


def test_the_compare_page_prints_every_registered_flag():
    import lcbayes.comparison.methods  # noqa: F401  (registers the methods' own flags)
    from lcbayes.comparison.flags import flag_table

    page = (DOCS.parent / "compare.md").read_text(encoding="utf-8")
    assert flag_table() in page
    assert all(f"| `{flag.name}` |" in flag_table() for flag in registry.flags())
    assert "`smc_below_vbem`" in flag_table() and "`bic_singular`" in flag_table()
