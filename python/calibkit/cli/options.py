"""Global options: given before the subcommand, they apply to every subcommand that uses
them, or are refused; never ignored."""

from __future__ import annotations

import argparse

from .parser import GLOBAL_OPTIONS

__all__ = ["UsageError", "merge_globals"]


class UsageError(ValueError):
    """A problem with the command-line arguments themselves (exit status 2)."""


def _flag(name: str) -> str:
    return "-q" if name == "quiet" else "--" + name.replace("_", "-")


def merge_globals(args: argparse.Namespace) -> argparse.Namespace:
    """Resolve ``calibkit [global options] [subcommand [its options]]`` into one value per
    option: a global option fills the subcommand's when that was not given, the same value
    given twice is fine, two different values are a :class:`UsageError`, and so is a global
    option the subcommand has no use for. Defaults (:data:`GLOBAL_OPTIONS`) fill the rest."""
    command = args.command
    if command is not None and args.model is not None:
        raise UsageError(f"--model chooses the default job's model (calibkit --model "
                         f"{args.model}, no subcommand); '{command}' reads your predictions")
    if command is None and args.model is None:
        args.model = "softmax-regression"
    for name, default in GLOBAL_OPTIONS.items():
        given = getattr(args, f"g_{name}")
        delattr(args, f"g_{name}")
        if command is None:
            setattr(args, name, default if given is None else given)
            continue
        if name == "num_bins" and command == "study" and given is not None:
            raise UsageError(
                f"calibkit --num-bins {given} study: the study sweeps several bin counts; give "
                f"them after the subcommand (calibkit study --num-bins 10 20 30), and the "
                f"headline tables' bin count with --report-bins {given}")
        if name == "num_bins" and command == "study":
            continue  # the study's own --num-bins: its sweep (None: the StudyConfig default)
        own = getattr(args, name, None)
        if given is not None and own is not None and given != own:
            raise UsageError(f"{_flag(name)} is given twice with different values ({given} "
                             f"before '{command}', {own} after it); give it once")
        value = own if own is not None else given
        setattr(args, name, default if value is None else value)
    return args
