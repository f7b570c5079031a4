"""The method registry: what :func:`lcbayes.compare` can score candidates by.

A **method** (:class:`Method`) is one small object: its name, the engine runs it *needs*
(:class:`Need`: an EM fit, a VB fit, an AIS run, ...), the columns it adds to the table (the
same names are the JSON keys and, with their headings, the report's columns), the column its
``rank_<name>`` ranks, its diagnostic flags (:class:`Flag`), whether it estimates the log
evidence itself (:class:`EvidenceRole`) and its plot style. The ``--methods`` choices of the
command line, the JSON keys and the report columns all come from here, so adding a method is one
new file under :mod:`lcbayes.comparison.methods` plus one :func:`register` call::

    from lcbayes.comparison import Column, Method, register

    register(Method(
        name="bic2", description="BIC with twice the penalty", needs=("em",),
        columns=(Column("bic2", "BIC x2"),), ranked="bic2",
        values=lambda fits: {"bic2": fits.em.loglik - fits.em.n_parameters
                             * math.log(fits.em.n_observed_rows)}))

A **need** (:class:`Need`) is an engine run shared by every method that names it, run once per
candidate; needs are registered the same way (:mod:`lcbayes.comparison.needs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ArgumentError, LcbayesError

__all__ = ["Column", "EvidenceRole", "Flag", "Method", "Need", "default_methods", "flag",
           "flags", "method", "methods", "need", "needs", "register", "register_flag",
           "register_need", "selectable_methods", "unregister", "unregister_need"]


@dataclass(frozen=True)
class Column:
    """A column of the comparison table (and key of its JSON rows).

    Attributes:
        name: the column (and JSON key).
        heading: its heading in the reports.
        in_report: whether the report's score table shows it (standard errors and effective
            sample sizes are shown inside another column's cell).
    """

    name: str
    heading: str
    in_report: bool = True


@dataclass(frozen=True)
class Flag:
    """A diagnostic flag of a candidate's row.

    Attributes:
        name: the flag (``flags`` holds the names of those raised, comma-separated).
        description: what it means and what to do, for the reports.
        check: ``check(context, i) -> reason | None`` on the
            :class:`~lcbayes.comparison.table.ComparisonResult` being built and the candidate's
            index (``context.rows[i]`` holds its scores); a reason raises the flag.
        cells: report columns the flag highlights.
        thresholds: the constants behind the rule (reported in the run's metadata).
    """

    name: str
    description: str
    check: Callable[[Any, int], str | None]
    cells: tuple[str, ...] = ()
    thresholds: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class EvidenceRole:
    """How a method's value can serve as a candidate's log evidence.

    Attributes:
        priority: the finite, unvetoed estimate of lowest priority is used (the built-in
            methods' are in :data:`lcbayes.comparison.policy.ROLES`: exact 0, SMC/bridge 0.5,
            AIS 1, Chib 1.5, Laplace 2.5; any number).
        value: the column holding ``ln p(y | m)``.
        stderr: the column of its standard error, or a number (0 for an exact value; NaN where
            the error is not quantified).
        vetoed_by: flags that disqualify the estimate for that row.
    """

    priority: float
    value: str
    stderr: str | float = float("nan")
    vetoed_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Method:
    """A way to score the candidates (module docstring).

    Attributes:
        name: the method's name (``methods=[...]``, ``--methods``, ``rank_<name>``).
        description: one line for the command line's help and the docs.
        needs: the engine runs it reads (:class:`Need` names).
        columns: the table columns it adds, in order.
        values: ``values(fits) -> {column: value}`` from a candidate's
            :class:`~lcbayes.comparison.needs.CandidateFits`; NaN where it has none.
        ranked: the column ``rank_<name>`` ranks (higher is better), or ``None``.
        flags: the flags it raises (:class:`Flag`).
        evidence: its role as a log evidence estimate, or ``None`` for a score.
        plot: ``(label, colour, marker)`` of the ranked column in the scores figure.
        default: whether :func:`lcbayes.compare` runs it when ``methods`` is not given.
        selectable: ``False`` for a method controlled by its own argument (``exact``).
        across: ``across(fits) -> [{column: value}, ...]`` for columns that compare the
            candidates with each other (a difference to the best, weights), from every
            candidate's :class:`~lcbayes.comparison.needs.CandidateFits`; ``None``: none.
    """

    name: str
    description: str
    needs: tuple[str, ...]
    columns: tuple[Column, ...]
    values: Callable[[Any], dict[str, float]]
    ranked: str | None = None
    flags: tuple[Flag, ...] = ()
    evidence: EvidenceRole | None = None
    plot: tuple[str, str, str] | None = None
    default: bool = True
    selectable: bool = True
    across: Callable[[list[Any]], list[dict[str, float]]] | None = None


@dataclass(frozen=True)
class Need:
    """An engine run per candidate that methods share.

    Attributes:
        name: what methods name in ``needs`` (``"em"``, ``"vbem"``, ...).
        label: shown on the progress bar.
        run: ``run(structure, data, settings, fits) -> result`` with the comparison's
            settings and the candidate's results of the needs that ran before it (those of
            ``after``).
        columns: table columns the need itself provides (e.g. ``loglik`` of the EM fit) and
            ``values(result) -> {column: value}`` for them.
        too_large: an engine that refuses large problems (:class:`~lcbayes.TooLargeError`): the
            candidate gets no result and a note instead of stopping the comparison.
        optional: a need some candidates have no result of by design (bridge sampling runs
            latent class models only): a method that reads it is ready without it (its
            ``values`` take ``None``).
        side_by_side: whether candidates may run it at the same time on threads; ``False``
            runs it for one candidate after another once the others are done (engines that
            compile programs of their own per candidate, which concurrent threads would
            compile and write to the compilation cache at once).
        after: the needs whose results ``run`` reads from ``fits`` (it starts once they are
            done, and may run beside the candidate's other needs); ``None``: every need
            registered before it.
        engine: the function whose keyword arguments ``engine_options[name]`` may set
            (:mod:`lcbayes.comparison.engine_options` checks them); ``run`` finds them in
            ``settings["options"][name]``. ``None``: options are passed on unchecked.
    """

    name: str
    label: str
    run: Callable[..., Any]
    columns: tuple[Column, ...] = ()
    values: Callable[[Any], dict[str, float]] | None = None
    too_large: bool = False
    optional: bool = False
    side_by_side: bool = True
    after: tuple[str, ...] | None = None
    engine: Callable[..., Any] | None = None


_METHODS: dict[str, Method] = {}
_NEEDS: dict[str, Need] = {}
_FLAGS: dict[str, Flag] = {}


def register_need(item: Need) -> Need:
    """Add (or replace) an engine run; needs run in the order they were registered."""
    _NEEDS[item.name] = item
    return item


def register_flag(item: Flag) -> Flag:
    """Add a flag (its position fixes the order flags are listed in); returns it."""
    _FLAGS.setdefault(item.name, item)
    return item


def register(item: Method) -> Method:
    """Add a method to the registry (its flags too); returns it. The name must be new, and its
    needs registered."""
    if item.name in _METHODS:
        raise LcbayesError(f"a method called {item.name!r} is already registered")
    unknown = [n for n in item.needs if n not in _NEEDS]
    if unknown:
        raise LcbayesError(f"method {item.name!r} needs {unknown}, which are not registered "
                           f"(known: {sorted(_NEEDS)})")
    for f in item.flags:
        register_flag(f)
    _METHODS[item.name] = item
    return item


def unregister(name: str) -> None:
    """Remove a method (e.g. one a test added) and the flags no other method raises."""
    _METHODS.pop(name, None)
    used = {f.name for m in _METHODS.values() for f in m.flags}
    for flag_name in [f for f in _FLAGS if f not in used]:
        del _FLAGS[flag_name]


def unregister_need(name: str) -> None:
    """Remove an engine run (e.g. one a test added); no registered method may name it."""
    users = [m.name for m in _METHODS.values() if name in m.needs]
    if users:
        raise LcbayesError(f"need {name!r} is named by methods {users}; unregister them first")
    _NEEDS.pop(name, None)


def method(name: str) -> Method:
    try:
        return _METHODS[name]
    except KeyError:
        raise ArgumentError(f"unknown method {name!r}; valid methods are "
                            f"{', '.join(selectable_methods())}") from None


def methods() -> tuple[Method, ...]:
    """Every registered method, in registration order."""
    return tuple(_METHODS.values())


def selectable_methods() -> tuple[str, ...]:
    """The names ``methods=`` accepts."""
    return tuple(m.name for m in _METHODS.values() if m.selectable)


def default_methods() -> tuple[str, ...]:
    """The methods :func:`lcbayes.compare` runs by default."""
    return tuple(m.name for m in _METHODS.values() if m.selectable and m.default)


def need(name: str) -> Need:
    return _NEEDS[name]


def needs() -> tuple[Need, ...]:
    """Every registered engine run, in registration (= run) order."""
    return tuple(_NEEDS.values())


def flag(name: str) -> Flag:
    return _FLAGS[name]


def flags() -> tuple[Flag, ...]:
    """Every registered flag, in order."""
    return tuple(_FLAGS.values())
