"""Progress bars that never warn about a missing ipywidgets.

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
from contextlib import contextmanager

__all__ = ["advance_loop_bar", "loop_bar", "new_bar", "widgets_available"]

#: The loop bars open now, the innermost last.
_LOOP_BARS: list = []


def widgets_available() -> bool:
    """Whether ipywidgets is installed (found, not imported), so ``tqdm.auto`` can draw its
    notebook widget without warning."""
    return importlib.util.find_spec("ipywidgets") is not None


def new_bar(**options):
    """A tqdm progress bar; ``options`` are tqdm's keyword arguments (``total``, ``desc``,
    ``unit``, ``disable``, ``file``, ...). The class is ``tqdm.auto.tqdm`` where ipywidgets is
    installed and ``tqdm.std.tqdm`` otherwise (module docstring)."""
    if widgets_available():
        from tqdm.auto import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm(**options)


@contextmanager
def loop_bar(total: int, show: bool, **options):
    """A bar over ``total`` steps of a compiled loop, open while the block runs and advanced
    by :func:`advance_loop_bar` (nothing when ``show`` is false); ``options`` as in
    :func:`new_bar`."""
    if not show:
        yield
        return
    bar = new_bar(total=total, **options)
    _LOOP_BARS.append(bar)
    try:
        yield
    finally:
        _LOOP_BARS.remove(bar)
        bar.close()


def advance_loop_bar(step) -> None:
    """Set the innermost :func:`loop_bar` to ``step + 1`` steps done."""
    if _LOOP_BARS:
        _LOOP_BARS[-1].update(int(step) + 1 - _LOOP_BARS[-1].n)
