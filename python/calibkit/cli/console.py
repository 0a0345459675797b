"""What the command writes besides its results: notes, warnings as one line each, library
messages worded for the shell, and quiet pipes."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator

__all__ = ["info", "warning", "shell_message", "one_line_warnings", "quiet_pipe"]

#: Python phrasings in library messages -> what a shell user types.
_SHELL_WORDS = (
    ("(calibkit.softmax(logits) for logits)", "(pass --logits if these are logits)"),
    ("convert them with calibkit.softmax(logits) first", "pass --logits if they are logits"),
    ("pass --logits (kind='logits') if", "pass --logits if"),
    ("--probs (kind='probs')", "--probs"),
    ("--renormalize (renormalize=True)", "--renormalize"),
    ("calibkit.softmax(logits)", "--logits"),
    (", or a 0/1 label matrix for multilabel data", ""),
    (" (labels=...)", ""),
    ("labels=...", "--labels FILE"),
    ("? Labels come first: f(labels, probs))", "?)"),
)


def shell_message(msg: str) -> str:
    """A library error message worded for the command line (flags, not Python calls).

    Examples
    --------
    >>> shell_message("pass --probs (kind='probs') to read them as probabilities")
    'pass --probs to read them as probabilities'
    """
    for old, new in _SHELL_WORDS:
        msg = msg.replace(old, new)
    return msg


def info(args, msg: str) -> None:
    """An informational message on stderr, unless ``-q``."""
    if not args.quiet:
        print(msg, file=sys.stderr)


def warning(msg: str) -> None:
    """One ``calibkit: warning: ...`` line on stderr (shown with ``-q`` too)."""
    text = " ".join(shell_message(str(msg)).split())
    print(f"calibkit: warning: {text}", file=sys.stderr)


@contextlib.contextmanager
def one_line_warnings() -> Iterator[None]:
    """Python warnings raised inside (by calibkit, scikit-learn, NumPy) are printed as one
    ``calibkit: warning: ...`` line each, each text once, without the source line Python
    prints."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = " ".join(str(message).split())
        name = getattr(category, "__name__", "Warning")
        if name not in ("UserWarning", "RuntimeWarning", "Warning"):
            text = f"{text} ({name})"
        if text not in seen:
            seen.add(text)
            warning(text)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        for quiet in (DeprecationWarning, PendingDeprecationWarning):  # for developers
            warnings.simplefilter("ignore", quiet)
        warnings.showwarning = show
        yield


@contextlib.contextmanager
def quiet_pipe() -> Iterator[None]:
    """A reader that stops early (``calibkit report ... | head``) ends the command quietly:
    BrokenPipeError reaches the caller with stdout pointed at /dev/null, so that Python's own
    flush at exit prints nothing either."""
    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # stdout replaced (tests) or closed
            pass
        finally:
            os.close(devnull)
        raise
