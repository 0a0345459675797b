"""A model's outputs on the splits a study needs (the bundled default lives in :mod:`.digits`).

The files are read by :mod:`calibkit.io`, the one reader of prediction files (the ``calibkit``
command reads through it too): :func:`load_predictions`, :class:`Predictions` and
:class:`PredictionFileError` are its, re-exported here. This module pairs a validation split
(to fit recalibration) with a test split: :class:`ModelSplits` and :func:`load_val_test`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..io import (
    PredictionFileError,
    Predictions,
    check_predictions,
    has_val_split,
    load_predictions,
)

__all__ = [
    "PredictionFileError",
    "Predictions",
    "ModelSplits",
    "load_predictions",
    "load_val_test",
    "check_predictions",
]


@dataclass(frozen=True)
class ModelSplits:
    """One model's outputs on a validation split (to fit recalibration) and a test split.

    Attributes
    ----------
    name : str
        Short name used in tables, file names and reports.
    val, test : Predictions
    description : str
        One line on where the outputs come from.
    """

    name: str
    val: Predictions
    test: Predictions
    description: str = ""


def load_val_test(
    val: str | Path | None = None,
    test: str | Path | None = None,
    *,
    kind: str | None = None,
    val_labels: str | Path | None = None,
    test_labels: str | Path | None = None,
    name: str | None = None,
    label_column: str | int | None = None,
    score_columns: str | Sequence[str | int] | None = None,
    scores_key: str | None = None,
    labels_key: str | None = None,
    renormalize: bool = False,
) -> ModelSplits:
    """Read a validation and a test split, from two files or one ``.npz`` holding both.

    Parameters
    ----------
    val, test : str or Path
        The files. When ``val`` is omitted (or is the same ``.npz`` as ``test``), the validation
        split is read from the ``val_*`` arrays of ``test``.
    kind : {"logits", "probs"}, optional
    val_labels, test_labels : str or Path, optional
        Labels files for ``.npy`` scores.
    name : str, optional
        Model name (default: the test file's stem).
    label_column, score_columns, scores_key, labels_key, renormalize : optional
        How to read each file, as for :func:`calibkit.io.read_predictions` (the ``calibkit
        study`` flags of the same names); they apply to both files (not to the ``val_*``
        arrays of a ``.npz`` holding both splits).

    Returns
    -------
    ModelSplits

    Raises
    ------
    PredictionFileError
        Missing files, no validation split, different numbers of classes in the two splits.

    Examples
    --------
    >>> splits = load_val_test(test="../shared/data/kangsepp__densenet40_c10.npz")  # doctest: +SKIP
    >>> len(splits.val), len(splits.test)  # doctest: +SKIP
    (5000, 10000)
    """
    if test is None:
        raise PredictionFileError("no test predictions given: pass --test FILE")
    tpath = Path(test)
    same = val is not None and Path(val).resolve() == tpath.resolve() if tpath.exists() else False
    how: dict[str, Any] = {"label_column": label_column, "score_columns": score_columns,
           "scores_key": scores_key, "labels_key": labels_key, "renormalize": renormalize}
    test_pred = load_predictions(tpath, kind=kind, labels=test_labels, **how)
    if val is None or same:
        if not has_val_split(tpath):
            raise PredictionFileError(
                f"{tpath}: no validation split: pass --val FILE, or store val_logits (or "
                "val_probs) and val_labels in the same .npz"
            )
        val_pred = load_predictions(tpath, kind=kind, split="val", renormalize=renormalize)
    else:
        vpath = Path(val)
        vsplit = "val" if has_val_split(vpath) else "test"
        val_pred = load_predictions(vpath, kind=kind, labels=val_labels, split=vsplit, **how)
    if val_pred.num_classes != test_pred.num_classes:
        raise PredictionFileError(
            f"the validation split has {val_pred.num_classes} classes ({val_pred.source}) but the "
            f"test split has {test_pred.num_classes} ({test_pred.source})"
        )
    return ModelSplits(
        name=name or tpath.stem,
        val=val_pred,
        test=test_pred,
        description=f"validation: {val_pred.source}; test: {test_pred.source}",
    )
