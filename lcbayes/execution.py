"""Where independent tasks run: here, one after another (the default), or on a Dask cluster.

Many-model work splits into tasks that are pure functions of (a structure, the data, a seed):
``compare``'s candidates, ``blrt``'s blocks of bootstrap replicates, a study's structures. An
:class:`Executor` maps a module-level function over such tasks and returns the results in task
order. Every task derives its randomness from the user's seed and its own position alone, so
the results are bit-identical whether the tasks run serially, on two workers or on fifty.

* :class:`SerialExecutor`: a plain loop in this process.
* :class:`DaskExecutor` (``dask.distributed``; ``pip install lcbayes[dask]``): a client of a
  running scheduler (``scheduler="tcp://host:8786"``, or the environment variable
  ``LCBAYES_SCHEDULER``), or of a ``LocalCluster`` of ``workers`` single-threaded worker
  processes that it starts and closes (without Dask's ``MALLOC_TRIM_THRESHOLD_``, see
  ``_dask_client``). Large shared arguments (the data) are scattered to the workers once per
  executor (``Client.scatter(broadcast=True)``), not shipped with every task nor again at
  every step of a search; a progress bar counts finished tasks.

``executor(...)`` resolves the ``executor=`` / ``scheduler=`` / ``workers=`` arguments of the
public functions into a context manager that yields an :class:`Executor`.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal, Protocol

from .errors import ArgumentError, ArgumentTypeError, LcbayesError
from .progress import new_bar
from .validation import check_int

__all__ = ["SCHEDULER_VARIABLE", "DaskExecutor", "Executor", "SerialExecutor", "executor"]

#: The environment variable naming a running Dask scheduler to join by default.
SCHEDULER_VARIABLE = "LCBAYES_SCHEDULER"


class Executor(Protocol):
    """Runs ``fn(task, **shared)`` for every task and returns the results in task order."""

    #: How many tasks run at the same time (1 for the serial executor).
    parallelism: int

    def map(self, fn: Callable, tasks: Sequence, shared: Mapping[str, Any] | None = None,
            *, progress: bool = False, desc: str = "tasks") -> list: ...


class SerialExecutor:
    """Every task in this process, one after another."""

    parallelism = 1

    def map(self, fn: Callable, tasks: Sequence, shared: Mapping[str, Any] | None = None,
            *, progress: bool = False, desc: str = "tasks") -> list:
        bar = new_bar(total=len(tasks), desc=desc, unit="task", disable=not progress, log_every=0,
                      file=sys.stderr)
        out = []
        try:
            for task in tasks:
                out.append(fn(task, **(shared or {})))
                bar.update(1)
        finally:
            bar.close()
        return out


def _call(fn: Callable, task, shared: Mapping[str, Any]):
    """``fn(task, **shared)`` on a worker (``shared``'s futures resolved by Dask; passed as
    one mapping, so its names cannot collide with ``Client.submit``'s own keywords)."""
    return fn(task, **shared)


class DaskExecutor:
    """Tasks on the workers of a Dask ``Client`` (module docstring)."""

    def __init__(self, client) -> None:
        self.client = client
        self.parallelism = max(1, sum(self.client.nthreads().values()))
        self._scattered: dict[int, tuple[Any, Any]] = {}  # id -> (value, its future)

    def scatter(self, value):
        """``value`` on every worker, scattered once per executor: a later :meth:`map` with
        the same object (a search's data at every step) reuses the workers' copy."""
        held = self._scattered.get(id(value))
        if held is None or held[0] is not value:
            held = (value, self.client.scatter(value, broadcast=True, hash=False))
            self._scattered[id(value)] = held
        return held[1]

    def map(self, fn: Callable, tasks: Sequence, shared: Mapping[str, Any] | None = None,
            *, progress: bool = False, desc: str = "tasks") -> list:
        scattered = {name: self.scatter(value) for name, value in (shared or {}).items()}
        bar = new_bar(total=len(tasks), desc=desc, unit="task", disable=not progress, log_every=0,
                      file=sys.stderr)
        lock = threading.Lock()

        def finished(_future) -> None:
            with lock:
                bar.update(1)

        try:
            futures = [self.client.submit(_call, fn, task, scattered, pure=False)
                       for task in tasks]
            for future in futures:
                future.add_done_callback(finished)
            return self.client.gather(futures)
        finally:
            bar.close()


def _dask_client(scheduler: str | None, workers: int | None):
    """A client of ``scheduler``, or of a new local cluster (and the cluster to close)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ArgumentError("executor='dask' needs dask.distributed: pip install "
                            "'lcbayes[dask]'") from None
    if scheduler is not None:
        try:
            return Client(scheduler, set_as_default=False), None
        except OSError as exc:
            raise LcbayesError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    import dask
    # workers keep glibc's adaptive malloc thresholds: Dask's MALLOC_TRIM_THRESHOLD_=65536
    # maps and unmaps every large temporary array afresh (twice the CPU time per local EM
    # step of a tree search, measured by benchmarks/bench_dask.py --no-malloc-trim)
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=":0",
                               silence_logs=logging.ERROR)
    return Client(cluster, set_as_default=False), cluster


@contextmanager
def executor(kind: Literal["serial", "dask"] | Executor | None = None,
             scheduler: str | None = None, workers: int | None = None) -> Iterator[Executor]:
    """The executor of a run, open for the ``with`` block.

    Args:
        kind: ``None`` (default): ``"dask"`` when ``scheduler`` is given or the environment
            variable :data:`SCHEDULER_VARIABLE` is set, else ``"serial"``; ``"serial"``;
            ``"dask"``; or an :class:`Executor` object (used as it is, not closed).
        scheduler: address of a running Dask scheduler (``"tcp://host:8786"``) to join;
            default: :data:`SCHEDULER_VARIABLE`, else a ``LocalCluster`` is started.
        workers: worker processes of that ``LocalCluster`` (default: the number of CPU cores).
    """
    if kind is not None and not isinstance(kind, str):
        if not callable(getattr(kind, "map", None)):
            raise ArgumentTypeError(f"executor must be 'serial', 'dask' or an Executor, got "
                                    f"{type(kind).__name__}")
        yield kind
        return
    if scheduler is not None and not isinstance(scheduler, str):
        raise ArgumentTypeError(f"scheduler must be an address string, got "
                                f"{type(scheduler).__name__}")
    scheduler = scheduler or os.environ.get(SCHEDULER_VARIABLE) or None
    workers = None if workers is None else check_int(workers, "workers", 1)
    if kind is None:
        kind = "dask" if scheduler is not None else "serial"
    if kind not in ("serial", "dask"):
        raise ArgumentError(f"executor must be 'serial' or 'dask', got {kind!r}")
    if kind == "serial":
        yield SerialExecutor()
        return
    client, cluster = _dask_client(scheduler, workers)
    try:
        yield DaskExecutor(client)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
