"""Progress bars that never warn about a missing ipywidgets, and plain lines in logs.

Where the output is not a terminal (a log file, a job scheduler's capture) and not a notebook,
:func:`new_bar` gives a :class:`LineProgress` instead: one plain line per step done (at most
one per ``log_every`` seconds, and always the last), never a carriage return.

``tqdm.auto`` draws tqdm's widget bar inside a Jupyter kernel. Where ipywidgets is not
installed it cannot, and merely *importing* it then emits ``TqdmWarning: IProgress not found.
Please update jupyter and ipywidgets`` (``tqdm/autonotebook.py``), even when no bar is ever
shown, before falling back to the text bar. :func:`new_bar` makes the same choice without the
warning: ``tqdm.auto`` only where ipywidgets can be imported (the widget in a notebook, the text
bar elsewhere), tqdm's text bar (``tqdm.std``) otherwise.

:func:`loop_bar` is a bar that compiled loops advance from inside (:func:`advance_loop_bar`
is the host side of a ``jax.debug.callback``; being a module-level function, it keeps the
compiled program independent of the bar).
"""

from __future__ import annotations

import importlib.util
import sys
import time
from contextlib import contextmanager

__all__ = ["LineProgress", "advance_loop_bar", "loop_bar", "new_bar", "progress_bar",
           "widgets_available"]

#: The loop bars open now, the innermost last.
_LOOP_BARS: list = []


def widgets_available() -> bool:
    """Whether ipywidgets is installed (found, not imported), so ``tqdm.auto`` can draw its
    notebook widget without warning."""
    return importlib.util.find_spec("ipywidgets") is not None


class LineProgress:
    """A progress report for logs with the part of tqdm's interface lcbayes uses (``update``,
    ``set_postfix_str``, ``close``, ``n``, a context manager): ``"<desc>: <n>/<total> <unit>s
    done, <s> s (<postfix>)"`` lines on ``file``."""

    def __init__(self, total: int | None = None, desc: str = "", unit: str = "it",
                 disable: bool = False, file=None, log_every: float = 10.0, **_ignored) -> None:
        self.total, self.desc, self.unit, self.disable = total, desc, unit, disable
        self.file, self.log_every = file or sys.stderr, log_every
        self.n, self._shown, self.postfix = 0, 0, ""
        self._start = self._last = time.perf_counter()

    def set_postfix_str(self, text: str) -> None:
        """Text after the count on the next line (as tqdm's postfix)."""
        self.postfix = text

    def update(self, steps: int = 1) -> None:
        self.n += steps
        now = time.perf_counter()
        if now - self._last >= self.log_every or self.n == self.total:
            self._line(now)

    def _line(self, now: float) -> None:
        if self.disable or self.n == self._shown:
            return
        of = "" if self.total is None else f"/{self.total}"
        tail = f" ({self.postfix})" if self.postfix else ""
        print(f"{self.desc}: {self.n}{of} {self.unit}s done, {now - self._start:.0f} s{tail}",
              file=self.file, flush=True)
        self._shown, self._last = self.n, now

    def close(self) -> None:
        self._line(time.perf_counter())

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _interactive(file) -> bool:
    """Whether ``file`` shows a live bar: a terminal, or a notebook kernel's output (its
    shell imported, tqdm.auto's test)."""
    isatty = getattr(file, "isatty", None)
    return bool(isatty and isatty()) or "ipykernel.zmqshell" in sys.modules


def new_bar(log_every: float = 10.0, **options):
    """A tqdm progress bar; ``options`` are tqdm's keyword arguments (``total``, ``desc``,
    ``unit``, ``disable``, ``file``, ...). The class is ``tqdm.auto.tqdm`` where ipywidgets is
    installed and ``tqdm.std.tqdm`` otherwise; a :class:`LineProgress` (a line per step, at
    most one per ``log_every`` seconds) where the output is a log (module docstring)."""
    if not _interactive(options.get("file") or sys.stderr):
        return LineProgress(log_every=log_every, **options)
    if widgets_available():
        from tqdm.auto import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm(**options)


@contextmanager
def progress_bar(show: bool, **options):
    """A :func:`new_bar` open while the block runs (``None`` when ``show`` is false)."""
    if not show:
        yield None
        return
    bar = new_bar(**options)
    try:
        yield bar
    finally:
        bar.close()


@contextmanager
def loop_bar(total: int, show: bool, **options):
    """A bar over ``total`` steps of a compiled loop, open while the block runs and advanced
    by :func:`advance_loop_bar` (nothing when ``show`` is false); ``options`` as in
    :func:`new_bar`."""
    with progress_bar(show, total=total, **options) as bar:
        if bar is not None:
            _LOOP_BARS.append(bar)
        try:
            yield
        finally:
            if bar is not None:
                _LOOP_BARS.remove(bar)


def advance_loop_bar(step) -> None:
    """Set the innermost :func:`loop_bar` to ``step + 1`` steps done."""
    if _LOOP_BARS:
        _LOOP_BARS[-1].update(int(step) + 1 - _LOOP_BARS[-1].n)
