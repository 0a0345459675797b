"""The one progress rule: a tqdm-style bar on stderr for work that may take a while.

Every function that takes ``progress=`` (:func:`calibkit.confidence_interval`,
:func:`calibkit.calibration_test`, :func:`calibkit.ece_sweep`,
:func:`calibkit.analysis.run_study`, the ``calibkit`` command) reads it with
:func:`as_progress` and draws with :class:`Progress`:

* ``progress=None`` (the default): a bar when stderr is a terminal, never in a pipe, a file,
  a test run or a notebook's captured stream;
* ``progress=True``: a bar on stderr wherever it goes (a log file, a notebook);
* ``progress=False`` (the command's ``-q``): never.

The bar appears only once the work has run :data:`DELAY` seconds, so quick calls print
nothing, and it erases itself when the work ends (the results are what stays on the screen).
A bar redraws itself from a thread while native code runs with the GIL released, so a long
call into the Rust kernels shows its elapsed time (and a spinner until its count arrives)
rather than a frozen line.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO

from .errors import InvalidParameterError

__all__ = ["Progress", "as_progress", "DELAY"]

#: Seconds of work before a bar appears (tqdm's ``delay``).
DELAY = 1.0
#: Seconds between redraws.
INTERVAL = 0.25
_WIDTH = 20
_SPINNER = "|/-\\"


def as_progress(progress) -> bool:
    """Whether to draw a bar, by the module's rule: ``None`` -> stderr is a terminal,
    ``True`` / ``False`` as given; anything else is an :class:`InvalidParameterError`.

    Examples
    --------
    >>> as_progress(False), as_progress(True)
    (False, True)
    """
    if progress is None:
        stream = sys.stderr
        try:
            return bool(stream is not None and stream.isatty())
        except (AttributeError, ValueError):  # a replaced or closed stream
            return False
    if progress is True or progress is False:
        return progress
    raise InvalidParameterError(
        f"progress must be True, False or None (a bar when stderr is a terminal); got "
        f"{progress!r}")


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Progress:
    """A progress bar (a no-op when disabled): ``with Progress(total, "ECE bootstrap",
    progress) as bar: ... bar.update(n)``.

    Parameters
    ----------
    total : int or None
        Units of work (None: unknown, the bar shows a count and the elapsed time).
    desc : str
        What is running, shown before the bar.
    progress : bool or None
        By :func:`as_progress`.
    unit : str, default "it"
    stream : file, optional
        Default ``sys.stderr``.
    delay : float, optional
        Default :data:`DELAY`.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with Progress(4, "work", True, stream=out, delay=0.0) as bar:
    ...     bar.update(4)
    >>> "4/4" in out.getvalue()
    True
    """

    def __init__(self, total: int | None, desc: str = "", progress=None, *, unit: str = "it",
                 stream: IO[str] | None = None, delay: float | None = None):
        self.enabled = as_progress(progress)
        self.total = None if total is None else int(total)
        self.desc = desc
        self.unit = unit
        self.n = 0
        self.stream = stream
        self.delay = DELAY if delay is None else float(delay)
        self._start = time.perf_counter()
        self._shown = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, name="calibkit-progress",
                                            daemon=True)
            self._thread.start()

    # -- drawing
    def _line(self) -> str:
        elapsed = time.perf_counter() - self._start
        head = f"{self.desc}: " if self.desc else ""
        spin = _SPINNER[int(elapsed / INTERVAL) % len(_SPINNER)]
        if self.n == 0:  # one native call doing all of it: no count to show yet
            what = f"{self.total} {self.unit} " if self.total else ""
            return f"{head}{what}{spin} [{_clock(elapsed)}]"
        if self.total:
            frac = min(self.n / self.total, 1.0)
            fill = int(frac * _WIDTH)
            bar = "#" * fill + " " * (_WIDTH - fill)
            eta = (f"<{_clock(elapsed * (1 - frac) / frac)}" if 0 < frac < 1 else "")
            return (f"{head}{frac * 100:3.0f}%|{bar}| {self.n}/{self.total} {self.unit} "
                    f"[{_clock(elapsed)}{eta}]")
        return f"{head}{self.n} {self.unit} [{_clock(elapsed)}]"

    def _draw(self) -> None:
        if time.perf_counter() - self._start < self.delay:
            return
        stream = self.stream or sys.stderr
        line = self._line()
        try:
            stream.write("\r" + line + " " * max(self._shown - len(line), 0))
            stream.flush()
        except (OSError, ValueError):  # a closed terminal: drawing is not worth an error
            self._stop.set()
            return
        self._shown = len(line)

    def _tick(self) -> None:
        while not self._stop.wait(INTERVAL):
            with self._lock:
                self._draw()

    # -- the caller's side
    def update(self, n: int = 1) -> None:
        """``n`` more units done."""
        if not self.enabled:
            return
        with self._lock:
            self.n += int(n)
            self._draw()

    def describe(self, desc: str) -> None:
        """Say what is running now."""
        if self.enabled:
            with self._lock:
                self.desc = desc

    def close(self) -> None:
        """Stop and erase the bar."""
        if not self.enabled or self._stop.is_set() and self._thread is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            self._draw()
            if self._shown:
                stream = self.stream or sys.stderr
                try:
                    stream.write("\r" + " " * self._shown + "\r")
                    stream.flush()
                except (OSError, ValueError):
                    pass

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
