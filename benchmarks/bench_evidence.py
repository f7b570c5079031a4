"""Evidence at the sizes users have (issue 44): reference-tempered SMC (``lcb.smc``) and bridge
sampling from Gibbs chains (``lcb.bridge_sampling``), the two independent estimates that
``lcb.compare`` combines, measured against exact values, published and long-run references, each
other and the clock. Writes ``reports/evidence-at-scale.md``.

Usage::

    python benchmarks/bench_evidence.py                      # every part (about two hours)
    python benchmarks/bench_evidence.py --parts coverage     # some parts
    python benchmarks/bench_evidence.py --report-only        # the report from the saved parts
    python benchmarks/bench_evidence.py --quick              # every part shrunk (minutes)

Every part runs in a process of its own (so its peak memory is its own: ``ru_maxrss``) and
saves what it measured as ``PART.json`` in ``--results`` (default
``benchmarks/results/evidence/``, ``quick/`` below it with ``--quick``); the report is built
from those files alone. Parts:

* ``coverage``: problems whose evidence is known exactly (``lcb.exact_evidence``): LC(2) on 4
  binary items and 30 rows, and the over-fitted LC(3) on 4 binary items and 20 rows from two
  classes, parameters drawn from the prior per seed; the share of nominal 95% intervals that
  cover, for SMC, bridge sampling and their combination (target 90-98%).
* ``exact``: LC(1) at 10^3, 10^4 and 10^5 rows, where the engine is exact.
* ``carcinoma``: ``lcb.compare`` K = 1..5 on poLCA's carcinoma data, twice in one process
  (compiling, then warm): P(K = 3 | y) (target 0.84-0.88) and seconds.
* ``election``: ``lcb.compare(n_classes="auto")`` on the 12 ratings of election.csv (1785
  rows, four levels, missing values): per K both estimates, their agreement, the seconds; the
  references K = 2..5 (-22349.44, -21624.58, -21243.1, -20988.5); where the evidence peaks.
* ``election_1_8``: ``lcb.compare(n_classes=range(1, 9))`` on election, the wall seconds
  (target under 10 minutes) and every K's seconds.
* ``longrun``: election K = 6 and 8 at about four times the default budget (SMC: twice the
  particles, eight runs, twice the EM restarts behind the reference; bridge sampling: eight
  runs of twice the draws, twice the modes and restarts), against the default.
* ``simulated``: ``lcb.compare`` K = 1..6 on 10^4 rows of 8 binary items from 3 classes:
  s.e. (target <= 0.3), seconds (target < 2 min), peak memory (< 2 GB), P(K = 3 | y) the
  largest, the over-fitted K = 4..6 against the independent estimate.
* ``large``: ``lcb.compare`` K = 1..6 on 10^5 rows of 20 binary items from 3 classes: every
  s.e. <= 0.5, under 15 minutes.
* ``modes``: why the SMC reference keeps several VB optima: election K = 10, the distinct optima
  of 30 VB restarts, each one's bound ``F`` beside its mode's log mass (the SMC estimate from a
  reference of that optimum alone, two runs of one sweep a step), and the reference of the
  optima within ``VB_WINDOW`` of the best bound.
* ``restarts``: why the reference's restarts grow with ``K``: election K = 12, four SMC runs of
  one round (two reference components) whose references come from 10 restarts (the old fixed
  number) and from ``default_restarts(12)``; the runs' values and spread.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "reports" / "evidence-at-scale.md"
RESULTS = REPO / "benchmarks" / "results" / "evidence"
DATA = REPO / "tests" / "data"
PARTS = ("coverage", "exact", "carcinoma", "election", "election_1_8", "longrun", "simulated",
         "large", "modes", "restarts")
ELECTION_ITEMS = ("MORALG", "CARESG", "KNOWG", "LEADG", "DISHONG", "INTELG", "MORALB", "CARESB",
                  "KNOWB", "LEADB", "DISHONB", "INTELB")
#: Published or long-run values of election's log evidence (issue 44's targets).
ELECTION_REFERENCE = {2: -22349.44, 3: -21624.58, 4: -21243.1, 5: -20988.5}
#: The simulated model: class weights; an item's probability of its second category in class
#: 1 (every item), class 2 (every item), class 3 (first half high, second half low).
WEIGHTS = (0.5, 0.3, 0.2)
HIGH, LOW = 0.85, 0.15
#: Full and quick sizes.
FULL = {"coverage": 25, "exact_rows": (1_000, 10_000, 100_000), "election_rows": None,
        "election_cap": 16, "sim_rows": 10_000, "large_rows": 100_000, "large_items": 20,
        "longrun_classes": (6, 8), "modes_classes": 10, "modes_restarts": 30, "modes_shown": 8,
        "restarts_classes": 12, "restarts_fixed": 10}
QUICK = {"coverage": 3, "exact_rows": (1_000,), "election_rows": 300, "election_cap": 4,
         "sim_rows": 1_000, "large_rows": 2_000, "large_items": 8, "longrun_classes": (3,),
         "modes_classes": 3, "modes_restarts": 6, "modes_shown": 3,
         "restarts_classes": 3, "restarts_fixed": 2}


def simulated(rows: int, items: int, seed: int):
    """``rows`` rows of ``items`` binary items from the 3-class model (:data:`WEIGHTS`)."""
    import lcbayes as lcb
    from lcbayes.params import from_tables

    model = lcb.latent_class(lcb.Dataset.from_codes(np.repeat([[0], [1]], items, axis=1)), 3)
    tables = [np.array([[1 - HIGH, HIGH], [1 - LOW, LOW],
                        [1 - HIGH, HIGH] if j < items // 2 else [1 - LOW, LOW]])
              for j in range(items)]
    return lcb.simulate(model, from_tables(model, (np.array([WEIGHTS]), *tables)), rows,
                        seed=seed)


def election(rows: int | None):
    import lcbayes as lcb

    data = lcb.Dataset.from_csv(DATA / "election.csv", columns=list(ELECTION_ITEMS))
    if rows is None:
        return data
    return lcb.Dataset.from_codes(np.asarray(data.codes)[:rows], columns=data.columns,
                                  labels=data.labels)


def _pair(result) -> list[float | None]:
    if result is None:
        return [None, None]
    return [_num(result.log_evidence), _num(result.stderr)]


def _num(x) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def comparison_rows(comp) -> list[dict]:
    """Per candidate: K, both estimates, the combination, F, flags, seconds."""
    frame = comp.to_frame()
    rows = []
    for i, name in enumerate(comp.names):
        row = frame.iloc[i]
        rows.append({"name": name, "k": int(row["n_classes"]),
                     "smc": _pair(comp.fits["smc"][i]), "bridge": _pair(comp.fits["bridge"][i]),
                     "evidence": [_num(row["log_evidence"]), _num(row["log_evidence_stderr"])],
                     "method": row["evidence_method"], "elbo": _num(row.get("elbo")),
                     "posterior": _num(row["posterior_prob"]), "flags": row["flags"],
                     "seconds": float(row["seconds"]),
                     "moved": _num(getattr(comp.fits["smc"][i], "moved", None))})
    return rows


# ---------------------------------------------------------------------------- parts
def part_coverage(size: dict, seed: int) -> dict:
    import lcbayes as lcb

    cases = []
    for kind, k, rows in (("LC(2), 30 rows", 2, 30), ("LC(3) over-fitted, 20 rows", 3, 20)):
        for s in range(size["coverage"]):
            rng = np.random.default_rng([seed, k, s])
            z = rng.integers(0, 2, rows)
            p = rng.dirichlet(np.ones(2), size=(2, 4))[:, :, 1]          # 2 classes x 4 items
            codes = (rng.random((rows, 4)) < p[z]).astype(int)
            data = lcb.Dataset.from_codes(codes)
            structure = lcb.latent_class(data, k)
            exact = lcb.exact_evidence(structure, data, max_terms=1e10).log_evidence
            smc = lcb.smc(structure, data, seed=s)
            bridge = lcb.bridge_sampling(structure, data, seed=s)
            cases.append({"kind": kind, "seed": s, "exact": exact, "smc": _pair(smc),
                          "bridge": _pair(bridge), "smc_seconds": smc.seconds,
                          "bridge_seconds": bridge.seconds})
    return {"cases": cases}


def part_exact(size: dict, seed: int) -> dict:
    import lcbayes as lcb

    cases = []
    for rows in size["exact_rows"]:
        data = simulated(rows, 8, seed)
        structure = lcb.latent_class(data, 1)
        smc = lcb.smc(structure, data, seed=seed)
        cases.append({"rows": rows, "exact": lcb.exact_evidence(structure, data).log_evidence,
                      "smc": _pair(smc), "seconds": smc.seconds})
    return {"cases": cases}


def part_carcinoma(size: dict, seed: int) -> dict:
    import lcbayes as lcb

    data = lcb.datasets.load("carcinoma")
    calls = []
    for _ in range(2):
        t = time.perf_counter()
        comp = lcb.compare(data, n_classes=range(1, 6), seed=seed, progress=False)
        calls.append({"seconds": time.perf_counter() - t, "rows": comparison_rows(comp)})
    # the whole command as a user runs it, the compilation cache warm after the calls above
    csv = Path(os.environ.get("TMPDIR", "/tmp")) / "bench-evidence-carcinoma.csv"
    lcb.datasets.write_csv("carcinoma", csv)
    command = [sys.executable, "-m", "lcbayes", "compare", str(csv), "--n-classes", "1-5",
               "--seed", str(seed)]
    processes = []
    for _ in range(2):
        t = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        processes.append(time.perf_counter() - t)
    return {"calls": calls, "process_seconds": processes}


def part_election(size: dict, seed: int) -> dict:
    import lcbayes as lcb

    data = election(size["election_rows"])
    t = time.perf_counter()

    def so_far(comp) -> dict:
        return {"seconds": time.perf_counter() - t, "rows": comparison_rows(comp),
                "batches": comp.settings.get("batches"), "peaked": comp.settings.get("peaked"),
                "cap": size["election_cap"]}

    def save(comp) -> None:      # a long search leaves what it measured, batch by batch
        partial = {**so_far(comp), "finished": False}
        print(f"  batches {partial['batches']}: {partial['seconds']:.0f} s", flush=True)
        _save_partial("election", partial)

    comp = lcb.compare(data, n_classes="auto", max_classes=size["election_cap"], seed=seed,
                       progress=False, on_batch=save)
    return {**so_far(comp), "finished": True}


def part_election_1_8(size: dict, seed: int) -> dict:
    import lcbayes as lcb

    data = election(size["election_rows"])
    ks = range(1, 9) if size["election_rows"] is None else range(1, 4)
    t = time.perf_counter()
    comp = lcb.compare(data, n_classes=ks, seed=seed, progress=False)
    return {"seconds": time.perf_counter() - t, "rows": comparison_rows(comp),
            "ks": list(ks)}


def part_longrun(size: dict, seed: int) -> dict:
    import lcbayes as lcb

    data = election(size["election_rows"])
    cases = []
    for k in size["longrun_classes"]:
        structure = lcb.latent_class(data, k)
        t = time.perf_counter()
        smc = lcb.smc(structure, data, seed=seed + 101, particles=512, runs=8, max_runs=8,
                      target_stderr=None, restarts=20)
        bridge = lcb.bridge_sampling(structure, data, seed=seed + 101, runs=8, draws=2000,
                                     warmup=400, max_modes=8, restarts=20)
        cases.append({"k": k, "smc": _pair(smc), "bridge": _pair(bridge),
                      "moved": _num(smc.moved), "seconds": time.perf_counter() - t})
    return {"cases": cases}


def _compare_part(data, ks, seed: int) -> dict:
    import lcbayes as lcb

    t = time.perf_counter()
    comp = lcb.compare(data, n_classes=ks, seed=seed, progress=False)
    return {"seconds": time.perf_counter() - t, "rows": comparison_rows(comp),
            "patterns": data.n_patterns}


def part_simulated(size: dict, seed: int) -> dict:
    return _compare_part(simulated(size["sim_rows"], 8, seed), range(1, 7), seed)


def part_large(size: dict, seed: int) -> dict:
    return _compare_part(simulated(size["large_rows"], size["large_items"], seed), range(1, 7),
                         seed)


def part_modes(size: dict, seed: int) -> dict:
    import jax

    import lcbayes as lcb
    from lcbayes.engines.vbem import vbem_restarts
    from lcbayes.jax_setup import on_device
    from lcbayes.samplers.gibbs import symmetric_prior
    from lcbayes.samplers.reference import (
        VB_WINDOW,
        product_reference,
        smoothing_for,
        tail_for,
        variational_optima,
    )
    from lcbayes.samplers.tempered_smc import TemperedData, run_tempered, tempered_data
    from lcbayes.validation import fit_data

    k = size["modes_classes"]
    structure = lcb.latent_class(election(size["election_rows"]), k)
    data = fit_data(structure, election(size["election_rows"]))
    rows = data.n_observed_rows
    t = time.perf_counter()
    modes = variational_optima(vbem_restarts(structure, data, restarts=size["modes_restarts"],
                                             seed=seed), rows, window=math.inf)
    tempered = tempered_data(data)
    prior = symmetric_prior(structure, "dirichlet", k, np.asarray(tempered.categories))
    device = TemperedData(on_device(tempered.one_hot), on_device(tempered.counts),
                          on_device(tempered.categories), jax.tree.map(on_device, tempered.rows))
    key = jax.random.PRNGKey(seed)

    def runs(optima, n: int, offset: int) -> list[float]:
        reference = product_reference(tempered, prior, optima, k, smoothing=smoothing_for(rows),
                                      tail=tail_for(rows))
        return [float(run_tempered(jax.random.fold_in(key, offset + r), device, prior,
                                   reference, k, particles=256, ess_target=0.9, sweeps=1,
                                   max_steps=1000).log_evidence) for r in range(n)]

    cases = [{"bound": o.loglik, "mass": runs([o], 2, 10 * i)}
             for i, o in enumerate(modes[:size["modes_shown"]])]
    window = [o for o in modes if o.loglik >= modes[0].loglik - VB_WINDOW]
    return {"k": k, "restarts": size["modes_restarts"], "distinct": len(modes),
            "cases": cases, "window": len(window), "vb_window": VB_WINDOW,
            "mixture": runs(window[:4], 3, 1000), "seconds": time.perf_counter() - t}


def part_restarts(size: dict, seed: int) -> dict:
    import lcbayes as lcb
    from lcbayes.samplers.reference import default_restarts

    k = size["restarts_classes"]
    data = election(size["election_rows"])
    structure = lcb.latent_class(data, k)
    cases = []
    for restarts in (size["restarts_fixed"], default_restarts(k)):
        t = time.perf_counter()
        res = lcb.smc(structure, data, runs=4, max_runs=4, target_stderr=None,
                      max_components=2, restarts=restarts, seed=seed)
        cases.append({"restarts": restarts, "runs": res.run_log_evidence.tolist(),
                      "estimate": _num(res.log_evidence), "stderr": _num(res.stderr),
                      "seconds": time.perf_counter() - t})
    return {"k": k, "cases": cases}


# ---------------------------------------------------------------------------- running
#: The running part's record (name, folder, seed, start, load before): what its JSON carries.
_RUNNING: dict = {}


def _write_part(out: dict, wall: float, load_after: float) -> None:
    """The running part's JSON: ``out`` with the run's record, wall seconds, load and peak
    memory."""
    record = {k: v for k, v in _RUNNING.items() if k != "results"}
    after = _programs()
    out = {**out, **record, "wall": wall, "load_after": load_after,
           "programs_new": (None if after is None or record.get("programs_before") is None
                            else after - record["programs_before"]),
           "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "source": _source()}
    _RUNNING["results"].mkdir(parents=True, exist_ok=True)
    (_RUNNING["results"] / f"{record['part']}.json").write_text(
        json.dumps(out, indent=1, default=float))


def _save_partial(name: str, out: dict) -> None:
    """Part ``name``'s figures so far, saved as its JSON (marked unfinished by the caller) so
    that a run stopped part-way leaves what it measured."""
    if _RUNNING.get("part") == name:
        _write_part(out, out.get("seconds", 0.0), float("nan"))


def run_part(name: str, quick: bool, seed: int, results: Path) -> None:
    """Part ``name`` in this process; its JSON with the machine, load and peak memory."""
    size = QUICK if quick else FULL
    _RUNNING.update({"part": name, "results": results, "quick": quick, "seed": seed,
                     "began": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                     "load_before": os.getloadavg()[0]})
    _RUNNING["programs_before"] = _programs()
    t = time.perf_counter()
    out = globals()[f"part_{name}"](size, seed)
    _write_part(out, time.perf_counter() - t, os.getloadavg()[0])


def _programs() -> int | None:
    """Traced programs in lcbayes's cache (:mod:`lcbayes.program_cache`), ``None`` without
    one: a part that adds none ran with the cache warm, one that adds many compiled afresh."""
    from lcbayes.program_cache import programs_folder

    folder = programs_folder()
    return None if folder is None else len(list(folder.glob("*.jax")))


def _source() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "lcbayes"], cwd=REPO,
                               text=True, capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" + uncommitted changes" if dirty else "")


# ---------------------------------------------------------------------------- report
def _f(x, digits=2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _est(pair) -> str:
    value, se = pair
    return "none" if value is None else f"{value:.2f} ({_f(se)})"


def _covers(pair, exact) -> bool | None:
    value, se = pair
    if value is None or se is None:
        return None
    return abs(value - exact) <= 1.96 * se


def _combined(smc, bridge):
    from lcbayes.comparison.policy import combine

    nan = float("nan")
    value, se, agree = combine(tuple(nan if v is None else v for v in smc),
                               tuple(nan if v is None else v for v in bridge))
    return [_num(value), _num(se)], agree


def _head(part: dict) -> str:
    """The part's run: mode, seed, wall, load, memory, source, and any note kept with it."""
    note = f" {part['note']}" if part.get("note") else ""
    new = part.get("programs_new")
    cache = ("" if new is None else " Compilation cache warm (no program traced afresh)."
             if new == 0 else f" {new} programs traced and compiled afresh (cache cold for "
             "them).")
    return (f"*{'quick' if part['quick'] else 'full'} mode, seed {part['seed']}, "
            f"{part['wall']:.0f} s wall from {part['began']}, load average "
            f"{part['load_before']:.1f} before and "
            + ("not recorded" if math.isnan(part["load_after"]) else f"{part['load_after']:.1f}")
            + f" after, peak memory "
            f"{part['peak_mb']:.0f} MB; source {part['source']}.*{cache}{note}")


def _agreement(rows: list[dict]) -> list[list[str]]:
    table = []
    for r in rows:
        s, b = r["smc"], r["bridge"]
        gap = (None if s[0] is None or b[0] is None else s[0] - b[0])
        comb = (None if gap is None or s[1] is None or b[1] is None
                else math.hypot(s[1], b[1]))
        table.append([r["name"], _est(s), _est(b), _f(gap),
                      "" if comb is None else f"{abs(gap) / comb:.1f}" if comb else "",
                      _est(r["evidence"]), _f(r["elbo"]), _f(r["posterior"], 3),
                      r["flags"] or "", f"{r['seconds']:.0f}"])
    return table


AGREE_HEADER = ["model", "SMC (s.e.)", "bridge (s.e.)", "SMC - bridge", "in comb. s.e.",
                "evidence (s.e.)", "VB F (bound)", "P(K | y)", "flags", "s"]


def report(results: Path, out: Path) -> str:
    from lcbayes.render import md_table, versions, write_text

    parts = {p: json.loads((results / f"{p}.json").read_text()) for p in PARTS
             if (results / f"{p}.json").is_file()}
    lines = ["# Evidence at scale (issue 44)", "",
             "Reference-tempered SMC (`lcb.smc`) and bridge sampling from Gibbs chains "
             "(`lcb.bridge_sampling`): two estimates of ln p(y | K) that share no draw, "
             "combined by `lcb.compare` where they agree. Regenerate: `python "
             "benchmarks/bench_evidence.py` (`--parts` some parts, `--report-only` this file "
             "from the saved parts in `benchmarks/results/evidence`).", "",
             f"**Machine**: {os.cpu_count()} cores, {platform.machine()}, each part in its own "
             "process (peak memory is the part's); seconds include compiling unless said.", ""]
    targets: list[list[str]] = []
    body: list[str] = []
    if "coverage" in parts:
        part = parts["coverage"]
        body += ["## Coverage on problems with a known evidence", "", _head(part), ""]
        stats = []
        for kind in sorted({c["kind"] for c in part["cases"]}):
            cases = [c for c in part["cases"] if c["kind"] == kind]
            for label, get in (("SMC", lambda c: c["smc"]), ("bridge", lambda c: c["bridge"]),
                               ("combined", lambda c: _combined(c["smc"], c["bridge"])[0])):
                cov = [_covers(get(c), c["exact"]) for c in cases]
                ok = [x for x in cov if x is not None]
                errors = [get(c)[0] - c["exact"] for c in cases if get(c)[0] is not None]
                stats.append([kind, label, str(len(cases)), str(len(ok)), str(sum(ok)),
                              f"{100 * sum(ok) / max(len(ok), 1):.0f}%",
                              _f(float(np.mean(errors)), 3),
                              _f(float(np.sqrt(np.mean(np.square(errors)))), 3)])
        body += [*md_table(["problems", "estimator", "problems", "with s.e.", "covered",
                            "coverage", "mean error", "RMSE"], stats), ""]
        for label in ("SMC", "bridge", "combined"):
            rows = [r for r in stats if r[1] == label]
            cov = sum(int(r[4]) for r in rows) / max(sum(int(r[3]) for r in rows), 1)
            count = sum(int(r[2]) for r in rows)
            targets.append([f"coverage of nominal 95% intervals, {label} ({count} problems)",
                            "90-98%", f"{100 * cov:.0f}%",
                            "met" if 0.9 <= cov <= 0.98 else "**not met**"])
    if "exact" in parts:
        part = parts["exact"]
        body += ["## One class: exact", "", _head(part), ""]
        rows = [[str(c["rows"]), f"{c['exact']:.4f}", f"{c['smc'][0] - c['exact']:.2e}",
                 _f(c["smc"][1], 4), f"{c['seconds']:.1f}"] for c in part["cases"]]
        body += [*md_table(["rows", "exact", "SMC - exact", "s.e.", "s"], rows), ""]
        worst = max(abs(c["smc"][0] - c["exact"]) for c in part["cases"])
        targets.append(["LC(1) exact at 10^3-10^5 rows", "|error| < 1e-6", f"{worst:.1e}",
                        "met" if worst < 1e-6 else "**not met**"])
    if "carcinoma" in parts:
        part = parts["carcinoma"]
        body += ["## carcinoma, K = 1..5", "", _head(part), ""]
        warm = part["calls"][-1]
        body += [*md_table(AGREE_HEADER, _agreement(warm["rows"])), ""]
        body += [f"`lcb.compare` took {part['calls'][0]['seconds']:.1f} s the first time in "
                 f"the process (compiling or loading programs) and {warm['seconds']:.1f} s the "
                 "second.", ""]
        p3 = next(r["posterior"] for r in warm["rows"] if r["k"] == 3)
        targets.append(["carcinoma: P(K = 3 | y)", "0.84-0.88", _f(p3, 3),
                        "met" if 0.84 <= p3 <= 0.88 else "**not met**"])
        whole = min(part["process_seconds"])
        body += [f"`lcbayes compare carcinoma.csv --n-classes 1-5`, the whole process with the "
                 f"compilation cache warm: {', '.join(f'{x:.1f}' for x in part['process_seconds'])}"
                 " s.", ""]
        targets.append(["carcinoma: `lcbayes compare --n-classes 1-5`, warm, whole process",
                        "no slower than before (14.1-15.3 s, issue 46)", f"{whole:.1f} s",
                        "met" if whole <= 15.3 else "**not met**"])
    if "election" in parts:
        part = parts["election"]
        rows = part["rows"]
        call = part.get("call", 'compare(n_classes="auto")')
        unfinished = part.get("finished") is False
        body += [f"## election: `{call}`", "", _head(part), "",
                 f"Batches of K: {part['batches']}; peaked: {part['peaked']} (cap "
                 f"{part['cap']})" + ("; **the run was stopped before it ended**: the table "
                                      "is the batches it finished." if unfinished else "."),
                 ""]
        body += [*md_table(AGREE_HEADER, _agreement(rows)), ""]
        ses = [r["evidence"][1] for r in rows if r["k"] > 1]
        worst = max((s for s in ses if s is not None), default=math.nan)
        targets.append(["election: every K with s.e. <= 0.5", "<= 0.5", _f(worst),
                        "met" if worst <= 0.5 else "**not met**"])
        apart = []
        for r in rows:
            s, b = r["smc"], r["bridge"]
            if None not in (s[0], b[0], s[1], b[1]):
                apart.append(abs(s[0] - b[0]) / math.hypot(s[1], b[1]))
        targets.append(["election: SMC and bridge within 2 combined s.e. at every K",
                        "all", f"largest {max(apart, default=math.nan):.1f} s.e.",
                        "met" if apart and max(apart) <= 2 else "**not met**"])
        for k, ref in ELECTION_REFERENCE.items():
            r = next((r for r in rows if r["k"] == k), None)
            if r is None or r["evidence"][0] is None:
                continue
            gap = r["evidence"][0] - ref
            bound = 2 * (r["evidence"][1] or 0) + 0.3
            targets.append([f"election K = {k} against {ref}", "within 2 s.e. + 0.3",
                            f"{gap:+.2f} (bound {bound:.2f})",
                            "met" if abs(gap) <= bound else "**not met**"])
        targets.append(["election: the auto run", "< 40 min, peak shown",
                        part.get("auto_note",
                                 f"{part['seconds'] / 60:.1f} min, peaked {part['peaked']}"
                                 + (", stopped before it ended" if unfinished else "")),
                        "met" if part["seconds"] < 2400 and part["peaked"] and not unfinished
                        else "**not met**"])
    if "election_1_8" in parts:
        part = parts["election_1_8"]
        body += [f"## election: `compare(n_classes=range({part['ks'][0]}, "
                 f"{part['ks'][-1] + 1}))`", "", _head(part), "",
                 *md_table(AGREE_HEADER, _agreement(part["rows"])), ""]
        targets.append([f"election: compare K = {part['ks'][0]}..{part['ks'][-1]}, wall",
                        "< 600 s", f"{part['seconds']:.0f} s",
                        "met" if part["seconds"] < 600 else "**not met**"])
    if "longrun" in parts:
        part = parts["longrun"]
        body += ["## election: long runs", "", _head(part), ""]
        default = {r["k"]: r for r in parts.get("election", {}).get("rows", [])}
        rows = []
        for c in part["cases"]:
            d = default.get(c["k"])
            long_value = _combined(c["smc"], c["bridge"])[0][0]
            gap = None if d is None or d["evidence"][0] is None else d["evidence"][0] - long_value
            rows.append([str(c["k"]), _est(c["smc"]), _est(c["bridge"]),
                         _f(long_value), "" if d is None else _est(d["evidence"]), _f(gap),
                         f"{c['seconds']:.0f}"])
            if d is not None and gap is not None:
                bound = 2 * d["evidence"][1] + 0.5
                targets.append([f"election K = {c['k']}: default within 2 s.e. + 0.5 of the "
                                "long run", f"<= {bound:.2f}", f"{gap:+.2f}",
                                "met" if abs(gap) <= bound else "**not met**"])
        body += [*md_table(["K", "long SMC", "long bridge", "long combined", "default",
                            "default - long", "s"], rows), ""]
    for name, title in (("simulated", "10^4 rows x 8 binary items, K = 1..6"),
                        ("large", "10^5 rows x 20 binary items, K = 1..6")):
        if name not in parts:
            continue
        part = parts[name]
        body += [f"## Simulated {title}", "", _head(part), f"{part['patterns']} patterns.", ""]
        body += [*md_table(AGREE_HEADER, _agreement(part["rows"])), ""]
        ses = [r["evidence"][1] for r in part["rows"] if r["evidence"][1] is not None]
        limit, seconds = (0.3, 120) if name == "simulated" else (0.5, 900)
        targets.append([f"{title}: every s.e.", f"<= {limit}", _f(max(ses)),
                        "met" if max(ses) <= limit else "**not met**"])
        targets.append([f"{title}: time", f"< {seconds} s", f"{part['seconds']:.0f} s",
                        "met" if part["seconds"] < seconds else "**not met**"])
        if name == "simulated":
            targets.append([f"{title}: peak memory", "< 2048 MB", f"{part['peak_mb']:.0f} MB",
                            "met" if part["peak_mb"] < 2048 else "**not met**"])
            best = max(part["rows"], key=lambda r: r["posterior"] or 0)
            targets.append([f"{title}: P(K = 3 | y) the largest", "K = 3",
                            f"K = {best['k']} ({_f(best['posterior'], 3)})",
                            "met" if best["k"] == 3 else "**not met**"])
            over = [r for r in part["rows"] if r["k"] >= 4]
            worst = max((abs(r["smc"][0] - r["bridge"][0]) - 2 * math.hypot(r["smc"][1],
                                                                            r["bridge"][1])
                         for r in over if None not in (*r["smc"], *r["bridge"])),
                        default=math.nan)
            targets.append(["over-fitted K = 4..6: SMC within 2 s.e. + 0.5 of bridge sampling",
                            "excess <= 0.5", f"{worst:+.2f}",
                            "met" if worst <= 0.5 else "**not met**"])
    if "modes" in parts:
        part = parts["modes"]
        body += [f"## Which VB optima: the masses of election's modes at K = {part['k']}", "",
                 _head(part), "",
                 f"{part['distinct']} distinct optima among {part['restarts']} VB restarts; "
                 f"the first {len(part['cases'])} by their bound F. A mode's log mass is the "
                 "SMC estimate from a reference of its optimum alone (two runs, one sweep a "
                 "step); F is that mass less the KL divergence of the mode's variational "
                 "posterior, and the gap is not the same for every mode.", ""]
        rows = []
        for i, c in enumerate(part["cases"]):
            mass = float(np.mean(c["mass"]))
            rows.append([str(i + 1), _f(c["bound"]), ", ".join(_f(m) for m in c["mass"]),
                         _f(mass - c["bound"])])
        body += [*md_table(["mode", "bound F", "ln mass (runs)", "ln mass - F"], rows), ""]
        masses = [float(np.mean(c["mass"])) for c in part["cases"]]
        body += [f"The best bound's mode alone: {_f(masses[0])}; the heaviest mode: "
                 f"{_f(max(masses))} (mode {int(np.argmax(masses)) + 1}). The reference of the "
                 f"{min(part['window'], 4)} optima within {part['vb_window']:g} nats of the best "
                 f"bound (of {part['window']}): runs "
                 f"{', '.join(_f(m) for m in part['mixture'])}.", ""]
    if "restarts" in parts:
        part = parts["restarts"]
        body += [f"## How many restarts: election at K = {part['k']}", "", _head(part), "",
                 "Four SMC runs of one round (two reference components each); each run's "
                 "reference from its own VB and EM restarts. A run whose restarts miss a "
                 "heavy mode comes out low by that mode's share.", ""]
        rows = [[str(c["restarts"]), ", ".join(_f(v) for v in c["runs"]),
                 _est([c["estimate"], c["stderr"]]), f"{float(np.std(c['runs'], ddof=1)):.2f}",
                 f"{c['seconds']:.0f}"] for c in part["cases"]]
        body += [*md_table(["restarts", "runs", "estimate (s.e.)", "run sd", "s"], rows), ""]
    vb_shown = "yes" if any(r.get("method") == "vbem" for p in parts.values()
                           for r in p.get("rows", [])) else "no"
    targets.append(["a table shows the VB bound as a candidate's evidence", "never", vb_shown,
                    "met" if vb_shown == "no" else "**not met**"])
    lines += ["## Targets", "", *md_table(["target", "wanted", "measured", "verdict"], targets), ""]
    missing = [p for p in PARTS if p not in parts]
    if missing:
        lines += [f"Not run yet: {', '.join(missing)} (`--parts {' '.join(missing)}`).", ""]
    lines += body + ["## Versions", ""] + [f"- {k}: {v}" for k, v in versions().items()]
    text = "\n".join(lines) + "\n"
    write_text(out, text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--one", choices=PARTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    results = args.results or (RESULTS / "quick" if args.quick else RESULTS)
    out = args.out or (results / "report.md" if args.quick else REPORT)
    if args.one:
        run_part(args.one, args.quick, args.seed, results)
        return 0
    if not args.report_only:
        for name in args.parts:
            print(f"part {name} ...", flush=True)
            command = [sys.executable, __file__, "--one", name, "--seed", str(args.seed),
                       "--results", str(results), *(["--quick"] if args.quick else [])]
            subprocess.run(command, check=True)
    print(report(results, out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
