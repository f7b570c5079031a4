"""``lcbayes learn DATA.csv [--skeleton tree.json | --tree [METHOD]] [--score bic]
[--method splitmerge] [--seed N] [--time-limit S] [--executor dask] [--workers N] [--json]
[--report out.html]``: search for
the number of latent classes (:func:`lcbayes.learn_classes`, Karčiauskas 2005), with
``--skeleton`` for the hidden cardinalities of an HLC model on that tree
(:func:`lcbayes.learn_hlc`), or with ``--tree`` for the hidden tree itself
(:func:`lcbayes.learn_tree`: EAST, or the HLTA-style build for many items), and print the
best model with the path of moves, or with ``--json`` one object: the chosen model under
``best`` (structure, parameters and scores in the form of ``lcbayes fit --json``, plus
``score``), the ``path`` of moves and the search's settings.

A skeleton file is JSON ``{"tree": {hidden: [children]}}`` (a structure file of kind ``hlc``
also works); its ``"cardinalities"``, if any, are used only by ``--method fixed``.

With ``--tree``, ``--executor dask`` (or ``--scheduler``) and ``--workers`` score each step's
candidates on a Dask cluster (and run the latent class bound beside the tree search); the
result is the same.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..learn import METHODS, SCORES, learn_classes, learn_hlc, learn_tree
from .common import (
    UsageError,
    add_data_arguments,
    add_executor_arguments,
    check_output,
    default,
    executor_options,
    read_data,
)

__all__ = ["add_arguments", "run"]


def add_arguments(cmd: argparse.ArgumentParser) -> None:
    """The arguments of ``lcbayes learn`` (its line in ``lcbayes --help`` is in
    :data:`lcbayes.cli.COMMANDS`)."""
    cmd.description = ("Find the number of latent classes that maximises a score by growing and "
                    "shrinking models with parameter reuse (SplitMerge; Karciauskas 2005), or "
                    "by random restarts (standard3, fixed).")
    add_data_arguments(cmd)
    cmd.add_argument("--skeleton", help="JSON file {\"tree\": {hidden: [children]}}: learn the "
                                        "hidden cardinalities of an HLC model on this tree")
    cmd.add_argument("--tree", nargs="?", const="auto", default=None, metavar="METHOD",
                     help="learn the hidden tree (structure and cardinalities) of an HLC model: "
                          "east (expand-adjust-simplify search), hlta (bottom-up build for "
                          "many items) or auto (the default: hlta from 20 items on); write "
                          "it after DATA.csv or as --tree=METHOD")
    cmd.add_argument("--no-lc-bound", action="store_true",
                     help="with --tree: skip the latent class search that bounds the tree's "
                          "score from below (much faster for many items)")
    cmd.add_argument("--max-hidden", type=int, default=None,
                     help="with --tree: never have more hidden nodes than this")
    cmd.add_argument("--score", default=default(learn_classes, "score"),
                     help=f"the score to maximise: {', '.join(SCORES)} (default "
                          f"{default(learn_classes, 'score')})")
    cmd.add_argument("--method", default=default(learn_classes, "method"),
                     help=f"the search: {', '.join(METHODS)} (default "
                          f"{default(learn_classes, 'method')})")
    cmd.add_argument("--n-classes", type=int, default=None,
                     help="the number of classes of --method fixed (with --skeleton: the "
                          "file's cardinalities)")
    cmd.add_argument("--max-classes", type=int, default=None,
                     help="never give a hidden node more states than this")
    cmd.add_argument("--seed", type=int, default=default(learn_classes, "seed"),
                     help=f"random seed (default {default(learn_classes, 'seed')})")
    cmd.add_argument("--time-limit", type=float, default=None,
                     help="seconds; return the best model found when they run out")
    add_executor_arguments(cmd, "each step's candidates of --tree (and the latent class "
                                "bound beside the tree search)")
    cmd.add_argument("--report", help="write a self-contained HTML report here")
    cmd.add_argument("--json", action="store_true",
                     help="print one JSON object {best, path, settings, ...}; no progress bar")
    cmd.set_defaults(handler=run)


def _skeleton_file(path: str) -> tuple[dict, dict | None]:
    """``(tree, cardinalities or None)`` of a skeleton file."""
    try:
        spec = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read skeleton file {path!r}: {exc}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("tree"), dict):
        raise UsageError(f"skeleton file {path!r} must be a JSON object with a \"tree\": "
                         "{hidden node: [children]}")
    return spec["tree"], spec.get("cardinalities")


def run(args: argparse.Namespace) -> int:
    check_output(args.report, "--report")
    if args.time_limit is not None and not args.time_limit > 0:
        raise UsageError(f"--time-limit must be a positive number of seconds, got "
                         f"{args.time_limit:g}")
    where = executor_options(args)
    if args.tree is None and any(v is not None for v in where.values()):
        raise UsageError("--executor, --scheduler and --workers work with --tree (the tree "
                         "search); the latent class and HLC searches run here")
    data = read_data(args)
    common = {"score": args.score, "method": args.method, "seed": args.seed,
              "time_limit": args.time_limit, "progress": not args.json}
    if args.tree is not None:
        if args.skeleton is not None or args.n_classes is not None:
            raise UsageError("--tree learns the tree; leave out --skeleton and --n-classes")
        result = learn_tree(data, score=args.score, seed=args.seed, time_limit=args.time_limit,
                            max_hidden=args.max_hidden, method=args.tree,
                            lc_bound=not args.no_lc_bound, progress=not args.json, **where)
    elif args.skeleton is None:
        result = learn_classes(data, n_classes=args.n_classes, max_classes=args.max_classes,
                               **common)
    else:
        if args.n_classes is not None:
            raise UsageError("--n-classes is for latent class models; with --skeleton, "
                             "--method fixed reads the file's cardinalities")
        tree, cards = _skeleton_file(args.skeleton)
        result = learn_hlc(data, tree, max_cardinality=args.max_classes,
                           cardinalities=cards if args.method == "fixed" else None, **common)
    written = None
    if args.report is not None:
        try:
            written = result.to_html(args.report, data_name=Path(args.data).name)
        except OSError as exc:
            raise UsageError(f"cannot write the report: {exc}") from None
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        print(result.summary())
        print()
        print(result.to_frame().to_string(index=False, float_format=lambda v: f"{v:.2f}"))
        print()
        print(result.fit.summary())
        if written is not None:
            print(f"wrote {written}")
    return 0
