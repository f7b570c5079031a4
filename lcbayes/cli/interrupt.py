"""Ctrl-C on the command line: the first interrupt prints one line and exits with status 130,
at once, whatever is running.

The main thread gets :class:`KeyboardInterrupt` as usual and unwinds (a thread pool cancels its
pending tasks without waiting for the running ones, a Dask cluster closes); ``main`` then leaves
with :func:`os._exit`, so worker threads still inside a compiled JAX call are not waited for. A
compiled call on the main thread holds Python's handler back until it returns, so a watchdog
thread, woken by the signal itself (:func:`signal.set_wakeup_fd`), leaves after :data:`GRACE`
seconds if the main thread has not; a second Ctrl-C leaves at once. Files are written whole
(:func:`lcbayes.render.write_bytes`), so none is left half written.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
from collections.abc import Iterator
from typing import NoReturn

__all__ = ["EXIT_STATUS", "GRACE", "MESSAGE", "exit_on_interrupt", "leave"]

#: Exit status of an interrupted command (128 + SIGINT, as shells report it).
EXIT_STATUS = 128 + signal.SIGINT
#: Seconds the main thread has to unwind before the watchdog leaves for it.
GRACE = 2.0
#: The one line an interrupt prints.
MESSAGE = "lcbayes: interrupted (Ctrl-C); stopped, no further output written"

_printed = threading.Lock()


def leave() -> NoReturn:
    """Print :data:`MESSAGE` (once, whichever thread comes first) and exit with
    :data:`EXIT_STATUS` now."""
    if _printed.acquire(blocking=False):
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            print(MESSAGE, file=sys.stderr, flush=True)
    os._exit(EXIT_STATUS)


def _raise(signum, frame) -> None:
    raise KeyboardInterrupt


def _watch(read_fd: int) -> None:
    """Wait for SIGINT's byte on ``read_fd``; then give the main thread :data:`GRACE`
    seconds (or until another signal) and leave. Ends at the end of the pipe."""
    while (byte := os.read(read_fd, 1)) and byte[0] != signal.SIGINT:
        pass
    if byte:
        select.select([read_fd], [], [], GRACE)
        leave()


@contextlib.contextmanager
def exit_on_interrupt() -> Iterator[None]:
    """The module docstring's handling of Ctrl-C for the ``with`` block (in the main thread;
    elsewhere signals do not arrive and the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    previous = signal.signal(signal.SIGINT, _raise)
    threading.Thread(target=_watch, args=(read_fd,), daemon=True,
                     name="lcbayes-interrupt").start()
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.set_wakeup_fd(previous_fd)
        os.close(write_fd)         # the watchdog reads the end of the pipe and stops
