"""HLC structure search (``lcb.learn_tree``, EAST): recovery of random generating trees.

Usage::

    python benchmarks/learn_tree.py --out reports            # 10 random 8-leaf trees, N = 5000
    python benchmarks/learn_tree.py --quick                  # 2 trees, N = 2000, prints only
    python benchmarks/learn_tree.py --models 20 --rows 10000 --leaves 8 --seed 1

Each generating model is a random regular HLC tree over ``--leaves`` binary items with 2 or 3
binary hidden nodes (a random tree on the hidden nodes, every hidden node given at least three
neighbours, the other leaves attached at random); every edge's table puts ``U(0.75, 0.9)`` on
one child state per parent state (a random one-to-one map), the root is ``Dirichlet(2, 2)``.
``--rows`` rows are simulated per model and ``learn_tree`` (BIC, seed 0) is run on them.

Reported per model: whether the learned tree equals the generating one up to root walking and
state labels (the same leaf bipartitions and hidden cardinalities,
:func:`lcbayes.learn.tree_drawing.same_tree`), the Robinson-Foulds distance between their leaf
bipartitions, the BIC of the learned model minus that of the generating structure fitted by EM
from the true parameters (positive: the search found a model the data prefer), the number of
moves and the wall time (compilation included; the first model pays most of it). Writes
``hlc-structure-search.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np

import lcbayes as lcb
from lcbayes.learn.tree_drawing import bracket, robinson_foulds, same_tree

REPORT = "hlc-structure-search.md"


def random_model(rng: np.random.Generator, n_leaves: int) -> tuple[lcb.Structure, dict]:
    """A random regular binary HLC model (module docstring) and its parameters."""
    columns = [f"X{j + 1}" for j in range(n_leaves)]
    n_hidden = int(rng.integers(2, 4))
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
    structure = lcb.hlc(blank, tree, {h: 2 for h in hidden})
    params = {}
    for i, name in enumerate(structure.nodes):
        if not structure.parents[i]:
            params[name] = rng.dirichlet([2.0, 2.0])
            continue
        strong = rng.uniform(0.75, 0.9, size=2)
        flip = rng.permutation(2)
        table = np.empty((2, 2))
        for s in range(2):
            table[s, flip[s]] = strong[s]
            table[s, 1 - flip[s]] = 1.0 - strong[s]
        params[name] = table
    return structure, params


def run(n_models: int, rows: int, n_leaves: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for m in range(n_models):
        truth, params = random_model(rng, n_leaves)
        data = lcb.simulate(truth, params, rows, seed=seed * 1000 + m)
        truth_fit = lcb.em(truth, data, init=params, restarts=0)
        started = time.perf_counter()
        res = lcb.learn_tree(data, seed=0)
        seconds = time.perf_counter() - started
        row = {"model": m + 1, "truth": bracket(truth), "learned": bracket(res.structure),
               "same": same_tree(res.structure, truth),
               "rf": robinson_foulds(res.structure, truth),
               "bic_gap": res.fit.bic - truth_fit.bic, "moves": len(res.path),
               "seconds": seconds}
        out.append(row)
        print(f"model {row['model']}: same={row['same']} RF={row['rf']} "
              f"BIC gap={row['bic_gap']:.2f} moves={row['moves']} {seconds:.1f} s\n"
              f"  truth   {row['truth']}\n  learned {row['learned']}", flush=True)
    return out


def report(rows: list[dict], args) -> str:
    same = sum(r["same"] for r in rows)
    lines = [
        "# HLC structure search: recovery of random trees",
        "",
        f"`python benchmarks/learn_tree.py --models {args.models} --rows {args.rows} "
        f"--leaves {args.leaves} --seed {args.seed}` (lcbayes {lcb.__version__}, "
        f"{platform.machine()}, {platform.python_version()}; see the script's docstring for "
        "the generating models).",
        "",
        f"**Recovered up to root walking and state labels: {same} of {len(rows)}**; mean "
        f"Robinson-Foulds distance {np.mean([r['rf'] for r in rows]):.2f}; median time "
        f"{np.median([r['seconds'] for r in rows]):.1f} s (first model, with most of the "
        f"compilation: {rows[0]['seconds']:.1f} s).",
        "",
        "BIC gap: BIC of the learned model minus BIC of the generating structure fitted by EM "
        "from the true parameters (>= 0: the search's model scores at least as well).",
        "",
        "| model | generating tree | learned tree | same | RF | BIC gap | moves | seconds |",
        "|---:|---|---|:---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['model']} | `{r['truth']}` | `{r['learned']}` | "
                     f"{'yes' if r['same'] else 'no'} | {r['rf']} | {r['bic_gap']:.2f} | "
                     f"{r['moves']} | {r['seconds']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--leaves", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="2 models of 2000 rows")
    parser.add_argument("--out", help="folder for the report")
    args = parser.parse_args()
    if args.quick:
        args.models, args.rows = 2, 2000
    rows = run(args.models, args.rows, args.leaves, args.seed)
    text = report(rows, args)
    if args.out is None:
        print(text)
    else:
        path = Path(args.out) / REPORT
        path.write_text(text)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
