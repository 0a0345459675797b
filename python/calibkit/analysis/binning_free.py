"""Binning-free estimators in the reports: smooth ECE, the KS error and the CORP decomposition
of one set of predictions (``calibkit report``), and, in the study, how the 32 binned metrics'
orderings of the recalibration methods agree with the orderings by smooth ECE and by KS.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputTypeError
from .ranking import rank_correlation
from .tables import Table

__all__ = ["binning_free_table", "method_values", "binning_free_study_tables", "BINNING_FREE_COLUMNS"]

#: Columns of :func:`method_values`.
BINNING_FREE_COLUMNS = ("smECE", "KS", "CORP MCB", "Brier")


def binning_free_table(labels=None, probs=None, *, confidence=None, correct=None) -> Table:
    """Top-label smooth ECE (with its bandwidth), KS error and CORP Brier and log decompositions,
    of labels and probabilities or of top-label input (``confidence=``, ``correct=``).

    Examples
    --------
    >>> import numpy as np
    >>> t = binning_free_table(np.array([0, 1, 1]), np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]))
    >>> t.index[:3]
    ['smooth ECE', 'smooth ECE bandwidth', 'KS error']
    """
    import calibkit

    top = {"confidence": confidence, "correct": correct}
    r = calibkit.binning_free(labels, probs, **top)
    log = calibkit.decompose(labels, probs, scoring="log", **top)
    rows = [
        ("smooth ECE", r.smece, "Blasiok & Nakkiran 2023 (= relplot smECE)"),
        ("smooth ECE bandwidth", r.smece_bandwidth, "automatic (relplot's fixed-point search)"),
        ("KS error", r.ksce, "Gupta et al. 2021"),
    ]
    for name, d in (("Brier", r.corp), ("log", log)):
        rows += [
            (f"CORP {name} score", d.score, "Dimitriadis, Gneiting & Jordan 2021"),
            (f"CORP {name} miscalibration", d.miscalibration, "score - score of isotonic recalibration"),
            (f"CORP {name} discrimination", d.discrimination, "base-rate score - recalibrated score"),
            (f"CORP {name} uncertainty", d.uncertainty, "score of the base rate"),
        ]
    return Table(
        name="binning_free",
        title="Binning-free calibration estimators (top-label)",
        index=[r_[0] for r_ in rows],
        columns=["value", "definition"],
        data=[[float(v), ref] for _, v, ref in rows],
        index_name="estimator",
        floatfmt=".6f",
        note="score = miscalibration - discrimination + uncertainty; see docs/binning-free.md.",
    )


def method_values(labels, probs_list) -> np.ndarray:
    """(n, 4) array: smECE, KS, CORP Brier miscalibration and Brier score of each probs array."""
    import calibkit

    out = np.empty((len(probs_list), len(BINNING_FREE_COLUMNS)))
    for i, p in enumerate(probs_list):
        r = calibkit.binning_free(labels, p)
        out[i] = [r.smece, r.ksce, r.corp.miscalibration, r.corp.score]
    return out


def _safe_rho(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))) or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(rank_correlation(x, y, "spearman"))


def binning_free_study_tables(ms) -> list[Table]:
    """The study's binning-free tables of one :class:`~calibkit.analysis.ModelStudy`.

    1. Smooth ECE, KS, CORP miscalibration and Brier score of every recalibration method's test
       probabilities.
    2. For each of the 32 metrics (at the report bin count): Spearman's rho between its ordering
       of the methods and the ordering by smooth ECE, and by KS (NaN when an ordering is
       constant).
    """
    if not all(hasattr(ms, a) for a in ("labels", "probs", "methods", "name", "__dict__")):
        raise InputTypeError(  # a ModelStudy (study.py imports this module, so no isinstance)
            f"ms: expected a ModelStudy (a model of run_study()'s result), got {type(ms).__name__}")
    cache = ms.__dict__.setdefault("_binning_free_tables", None)
    if cache is not None:
        return cache
    vals = method_values(ms.labels, [ms.probs[m] for m in ms.methods])
    values_table = Table(
        name=f"binning_free_{ms.name}",
        title=f"Binning-free estimators of each recalibration method ({ms.name}, test split)",
        index=[str(i) for i in range(len(ms.methods))],
        columns=["method"] + list(BINNING_FREE_COLUMNS),
        data=[[m] + [float(v) for v in vals[i]] for i, m in enumerate(ms.methods)],
        index_name="#",
        note="Top-label smooth ECE (automatic bandwidth), KS error, CORP Brier decomposition.",
    )
    binned = ms.values[:, :, ms.bin_column(ms.report_bins)]
    rows = []
    for j, spec in enumerate(ms.space):
        rows.append([spec.name, _safe_rho(binned[:, j], vals[:, 0]), _safe_rho(binned[:, j], vals[:, 1])])
    rho = np.array([[r[1], r[2]] for r in rows])
    corr_table = Table(
        name=f"binning_free_agreement_{ms.name}",
        title=(f"Spearman rho between each metric's ordering of the methods and the ordering by "
               f"smooth ECE / KS ({ms.name}, {ms.report_bins} bins)"),
        index=ms.metric_labels(),
        columns=["metric", "rho vs smECE", "rho vs KS"],
        data=rows,
        index_name="#",
        floatfmt=".3f",
        note=(f"Mean over metrics: {np.nanmean(rho[:, 0]):.3f} vs smooth ECE, "
              f"{np.nanmean(rho[:, 1]):.3f} vs KS; rho(smECE, KS) = "
              f"{_safe_rho(vals[:, 0], vals[:, 1]):.3f}."),
    )
    ms.__dict__["_binning_free_tables"] = [values_table, corr_table]
    return ms.__dict__["_binning_free_tables"]
