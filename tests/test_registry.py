"""The method registry: a method added through the registry alone appears in the table, the
JSON, the command line's choices and the reports, with its rank, flag and evidence role; the
built-in methods are what the registry holds."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import lcbayes as lcb
from lcbayes.cli import main
from lcbayes.comparison import (
    Column,
    EvidenceRole,
    Flag,
    Method,
    Need,
    default_methods,
    register,
    register_need,
    selectable_methods,
    unregister,
    unregister_need,
)


def _bic2(fits) -> dict[str, float]:
    fit = fits.em
    return {"toy_bic2": fit.loglik - fit.n_parameters * math.log(fit.n_observed_rows)}


TOY_FLAG = Flag("toy_first_row", "raised on the first candidate, to test the registry",
                check=lambda comp, i: "it is the first" if i == 0 else None,
                cells=("toy_bic2",), thresholds={"TOY_THRESHOLD": 1.0})
TOY = Method(name="toy_bic2", description="BIC with twice the penalty (a test method)",
             needs=("em",), columns=(Column("toy_bic2", "BIC x2"),), values=_bic2,
             ranked="toy_bic2", flags=(TOY_FLAG,), plot=("BIC x2", "tab:pink", "h"),
             default=False)


@pytest.fixture
def toy():
    register(TOY)
    yield TOY
    unregister(TOY.name)


@pytest.fixture(scope="module")
def data() -> lcb.Dataset:
    rng = np.random.default_rng(3)
    return lcb.Dataset.from_codes(rng.integers(0, 2, (60, 3)), columns=["a", "b", "c"])


def test_the_built_in_methods_are_registered():
    assert selectable_methods() == ("bic", "bic_e", "aic", "icl", "cs", "bicp", "abic", "caic",
                                    "entropy", "lmr", "blrt", "vbem", "smc", "ais", "laplace",
                                    "laplace_block", "laplace_diag", "draper", "mled", "chib",
                                    "loo")
    assert default_methods() == ("bic", "bic_e", "aic", "icl", "cs", "vbem", "smc")


def test_a_registered_method_reaches_the_table_json_and_reports(toy, data, tmp_path):
    comp = lcb.compare(data, n_classes=[1, 2], methods=["bic", "toy_bic2"], restarts=2,
                       exact=False, progress=False)
    frame = comp.to_frame()
    expected = [f.loglik - f.n_parameters * math.log(data.n_rows) for f in comp.em]
    np.testing.assert_allclose(frame["toy_bic2"], expected)
    best = int(np.argmax(expected))
    assert frame["rank_toy_bic2"].tolist() == [1 if i == best else 2 for i in range(2)]
    assert list(frame.columns).index("toy_bic2") == list(frame.columns).index("bic") + 1
    flags = [row.split(",") for row in frame["flags"]]
    assert "toy_first_row" in flags[0] and "toy_first_row" not in flags[1]
    out = comp.to_dict()
    assert out["rows"][0]["toy_bic2"] == pytest.approx(expected[0])
    assert "toy_first_row" in out["rows"][0]["flags"]
    assert out["metadata"]["flags"]["toy_first_row"].startswith("raised on the first")
    assert out["metadata"]["thresholds"]["TOY_THRESHOLD"] == 1.0
    html = comp.to_html(tmp_path / "toy.html").read_text()
    assert "<th>BIC x2</th>" in html and "toy_first_row" in html
    assert '<td class="flag">' in html  # the flagged cell is highlighted
    assert "| BIC x2 |" in comp.to_markdown() and "BIC x2" in comp.summary()


def test_a_registered_method_is_a_command_line_choice(toy, data, tmp_path, capsys):
    csv = tmp_path / "toy.csv"
    data.to_pandas().to_csv(csv, index=False)
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert "toy_bic2" in capsys.readouterr().out
    status = main(["compare", str(csv), "--n-classes", "1-2", "--methods", "bic,toy_bic2",
                   "--exact", "no", "--restarts", "2", "--json"])
    assert status == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["rank_toy_bic2"] for r in rows] and all("toy_bic2" in r for r in rows)


def test_an_evidence_method_takes_its_place_by_priority(data):
    """A method with an evidence role of priority 0.5 is preferred to AIS and VB, not to the
    exact value."""
    method = Method(name="toy_evidence", description="a fixed log evidence", needs=("em",),
                    columns=(Column("toy_evidence", "toy"),),
                    values=lambda fits: {"toy_evidence": fits.em.loglik - 5.0},
                    ranked="toy_evidence", default=False,
                    evidence=EvidenceRole(priority=0.5, value="toy_evidence", stderr=0.25))
    register(method)
    try:
        comp = lcb.compare(data, n_classes=[2], methods=["vbem", "toy_evidence"], restarts=2,
                           exact=False, progress=False)
        row = comp.to_frame().iloc[0]
        assert row["evidence_method"] == "toy_evidence"
        assert row["log_evidence"] == pytest.approx(comp.em[0].loglik - 5.0)
        assert row["log_evidence_stderr"] == 0.25
    finally:
        unregister("toy_evidence")
    assert "toy_evidence" not in selectable_methods()


def test_registration_refuses_a_name_twice_and_unknown_needs():
    with pytest.raises(lcb.LcbayesError, match="already registered"):
        register(Method(name="bic", description="", needs=("em",), columns=(),
                        values=lambda fits: {}))
    with pytest.raises(lcb.LcbayesError, match="needs \\['laplace_fit'\\]"):
        register(Method(name="toy_laplace", description="", needs=("laplace_fit",),
                        columns=(), values=lambda fits: {}))
    with pytest.raises(lcb.LcbayesError, match="valid methods are bic, bic_e"):
        lcb.compare(lcb.Dataset.from_codes([[0, 1], [1, 0]]), n_classes=[1], methods=["nope"])


# ---------------------------------------------------------------------- engine options
def _toy_engine(structure, data, *, scale: float = 1.0, shift: float = 0.0) -> float:
    """A toy engine: the options it takes are what ``engine_options`` may set."""
    return scale * data.n_rows + shift


@pytest.fixture
def toy_need():
    need = register_need(Need("toy_engine", "toy", lambda structure, data, settings, fits:
                              _toy_engine(structure, data, **settings["options"]["toy_engine"]),
                              after=(), engine=_toy_engine))
    register(Method(name="toy_scaled", description="a toy engine's number", needs=("toy_engine",),
                    columns=(Column("toy_scaled", "toy"),),
                    values=lambda fits: {"toy_scaled": fits.toy_engine}, default=False))
    yield need
    unregister("toy_scaled")
    unregister_need("toy_engine")


def test_engine_options_reach_a_registered_engine(toy_need, data):
    comp = lcb.compare(data, n_classes=[1], methods=["toy_scaled"], exact=False, progress=False,
                       engine_options={"toy_engine": {"scale": 2.0, "shift": 1.0}})
    assert comp.to_frame()["toy_scaled"].iloc[0] == 2.0 * data.n_rows + 1.0
    assert comp.settings["engine_options"]["toy_engine"] == {"scale": 2.0, "shift": 1.0}
    with pytest.raises(lcb.ArgumentError, match=r"\['scal'\]; _toy_engine takes \['scale', "
                                                r"'shift'\]"):
        lcb.compare(data, n_classes=[1], methods=["toy_scaled"],
                    engine_options={"toy_engine": {"scal": 2.0}})
    assert "toy_engine" not in lcb.compare(data, n_classes=[1], methods=["bic"], exact=False,
                                           progress=False).settings["engine_options"]


@pytest.mark.parametrize(("options", "message"), [
    ({"ais": {"chain": 4}}, r"engine_options\['ais'\] has unknown options \['chain'\]; ais "
                            r"takes \["),
    ({"aiss": {}}, r"unknown engines \['aiss'\]; the engines are \["),
    ({"em": {"seed": 1}}, r"sets \['seed'\], which compare sets for every engine"),
    ({"smc": {"time_limit": 1}}, r"sets \['time_limit'\]"),
    ({"ais": 16}, r"engine_options\['ais'\] must be a dict of options, got int"),
    ({"lmr": {"alpha": 0.1}}, r"\['alpha'\]; the 'lmr' engine takes none"),
    ([("ais", {})], r"engine_options must be a dict \{engine: \{option: value\}\}, got list"),
])
def test_bad_engine_options_are_refused_before_anything_runs(data, options, message):
    with pytest.raises(lcb.ArgumentError, match=message):
        lcb.compare(data, n_classes=[1, 2], engine_options=options, progress=False)


def test_engine_options_of_the_built_in_engines_reach_them(data):
    options = {"em": {"max_iter": 3}, "vbem": {"max_iter": 2}}
    with pytest.warns(lcb.ConvergenceWarning):
        comp = lcb.compare(data, n_classes=[2], methods=["bic", "vbem"], exact=False, seed=1,
                           restarts=2, progress=False, engine_options=options)
        em = lcb.em(lcb.latent_class(data, 2), data, restarts=2, seed=1, max_iter=3)
        vb = lcb.vbem(lcb.latent_class(data, 2), data, restarts=2, seed=1, max_iter=2,
                      init=em)
    assert comp.em[0].loglik == em.loglik and comp.em[0].n_iter == em.n_iter == 3
    assert comp.vbem[0].elbo == vb.elbo
    assert comp.settings["engine_options"] == options
