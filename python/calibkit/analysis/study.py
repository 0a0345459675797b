"""The paper's whole analysis on a model's outputs: :func:`run_study`.

For each model (validation + test outputs):

1. the eight recalibration methods of the paper (``calibkit.recalibration.PAPER_METHODS``) are
   fitted on the validation split and applied to the test split;
2. every metric of the 32-metric space is computed at every bin count for every method
   (:func:`calibkit.evaluate`), giving the rank-order table (which method each metric ranks
   first .. eighth; lower error = better rank);
3. the orderings are compared: Spearman's rho (standard formula) and Kendall's tau between
   every pair of metrics, and, per metric, across every pair of bin counts (bin sensitivity),
   grouped by property value;
4. a temperature is optimised for each metric and scored with ECE (and RMSCE as control),
   grouped by property, with the calibration-error-vs-temperature curves;
5. histogram binning vs class-conditional histogram binning under ECE and class-conditional ECE.

On the bundled default (digits) the label-noise experiment runs as well (6). The result object
holds every number; :func:`calibkit.analysis.report.write_report` turns it into report.md,
report.html, PNG figures, CSV tables and a JSON dump.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .._params import (
    as_bin_counts,
    as_instance,
    as_int,
    as_num_bins,
    as_real,
    as_study_seed,
    as_threshold,
    renames,
)
from .._progress import Progress
from ..errors import CalibkitError, InvalidParameterError, MethodFailedError, UnknownNameError
from ._util import make_estimator, recalibration_inputs
from .binning_free import binning_free_study_tables
from .conditionality import ConditionalityResult, class_conditionality
from .data import ModelSplits
from .digits import DEFAULT_MODELS, DigitsSplit, default_models, load_digits_split
from .label_noise import LabelNoiseResult, label_noise_study
from .properties import group_by_property
from .ranking import bin_sensitivity, metric_rank_correlations, rank_order_table
from .tables import Table
from .temperature import (
    DEFAULT_TEMPERATURES,
    TemperatureResult,
    optimise_temperature_per_metric,
    temperature_table,
)
from .trust_table import interval_table

__all__ = ["StudyConfig", "ModelStudy", "StudyResult", "run_study", "evaluate_methods", "package_version"]

#: The named metrics shown in the per-method summary table, as (label, space name).
SUMMARY_METRICS = (("ECE", "ECE"), ("Class-conditional ECE", "CCE"), ("SCE", "SCE"),
                   ("ACE", "ACE"), ("TACE", "TACE"), ("RMSCE", "RMSCE"))


def package_version() -> str:
    """calibkit's version string (``"unknown"`` when it cannot be determined)."""
    try:
        import calibkit

        v = getattr(calibkit, "__version__", None)
        if v:
            return str(v)
    except Exception:  # pragma: no cover
        pass
    try:
        from importlib.metadata import version

        return version("calibkit")
    except Exception:  # pragma: no cover
        return "unknown"


@dataclass(frozen=True)
class StudyConfig:
    """Settings of a study run (all recorded in the report).

    Parameters
    ----------
    num_bins : tuple of int, default (10, 20, 30, 40, 50)
        The bin counts of the sweep (rank-order tables, bin sensitivity).
    report_bins : int, default 15
        Bin count of the headline tables: rank order, metric correlations, temperature
        optimisation, class conditionality and label noise.
    random_state : int, default 0
        Seeds the default data split, the default models, the recalibration methods, the
        bootstrap intervals and the label noise (an integer in [0, 2**32 - 1], scikit-learn's
        range; the command line's ``--seed``). ``seed=`` before calibkit 0.2 (still accepted,
        and ``.seed`` still read, with a DeprecationWarning).
    quick : bool, default False
        A reduced run for CI (see :meth:`quick_config`); recorded in the report.
    label_noise : bool or None, default None
        Run the label-noise experiment; None = only on the bundled default (it retrains a model,
        so it needs features, which user-supplied logits do not have).
    noise_levels : int, default 11
        Number of label-noise levels from 0 to ``max_noise``.
    max_noise : float, default 0.05
    importance_threshold : float, default 0.1
        Confidence above which a probability is "important" (label-noise experiment).
    temperatures : tuple of float
        Grid of the calibration-error-vs-temperature curves.
    temperature_starts : int or None, default None
        Nelder-Mead starts of each per-metric temperature fit (None: the estimator's default,
        5; quick mode: 2).
    models : tuple of str, default ("softmax-regression", "mlp")
        Which default models to train when no predictions are given.
    """

    num_bins: tuple = (10, 20, 30, 40, 50)
    report_bins: int = 15
    random_state: int = 0
    quick: bool = False
    label_noise: bool | None = None
    noise_levels: int = 11
    max_noise: float = 0.05
    importance_threshold: float = 0.1
    temperatures: tuple = tuple(float(t) for t in DEFAULT_TEMPERATURES)
    temperature_starts: int | None = None
    models: tuple = DEFAULT_MODELS

    def __post_init__(self) -> None:
        nb, _ = as_bin_counts(self.num_bins)
        if len(nb) < 2:
            raise InvalidParameterError(
                f"num_bins: need at least two distinct positive bin counts for the bin-sensitivity "
                f"analysis (got {self.num_bins!r})"
            )
        object.__setattr__(self, "num_bins", nb)
        as_num_bins(self.report_bins, "report_bins")
        if self.temperature_starts is not None:
            as_int(self.temperature_starts, "temperature_starts", minimum=1)
        as_int(self.noise_levels, "noise_levels", minimum=1)
        as_study_seed(self.random_state, "random_state")
        as_real(self.max_noise, "max_noise (a fraction)", low=0.0, high=1.0)
        as_threshold(self.importance_threshold, "importance_threshold")
        object.__setattr__(self, "temperatures", tuple(float(t) for t in self.temperatures))
        object.__setattr__(self, "models", tuple(self.models))

    @classmethod
    def quick_config(cls, **overrides) -> StudyConfig:
        """The reduced CI setting: 3 bin counts, 3 noise levels, 21 temperatures, 2 Nelder-Mead
        starts per temperature fit, one default model."""
        base: dict[str, Any] = dict(
            num_bins=(10, 30, 50),
            quick=True,
            noise_levels=3,
            temperatures=tuple(float(t) for t in np.geomspace(0.1, 10.0, 21)),
            temperature_starts=2,
            models=("softmax-regression",),
        )
        base.update(overrides)
        return cls(**base)

    @property
    def seed(self) -> int:
        """Deprecated (since calibkit 0.2): :attr:`random_state`."""
        import warnings

        warnings.warn("StudyConfig.seed is deprecated since calibkit 0.2 and will be removed in "
                      "the next release; use StudyConfig.random_state", DeprecationWarning,
                      stacklevel=2)
        return self.random_state

    @property
    def all_bins(self) -> tuple:
        """The sweep plus the report bin count, sorted."""
        return tuple(sorted(set(self.num_bins) | {int(self.report_bins)}))

    def to_dict(self) -> dict:
        """JSON-ready settings."""
        return {
            "num_bins": list(self.num_bins),
            "report_bins": int(self.report_bins),
            "random_state": int(self.random_state),
            "quick": bool(self.quick),
            "label_noise": self.label_noise,
            "noise_levels": int(self.noise_levels),
            "max_noise": float(self.max_noise),
            "importance_threshold": float(self.importance_threshold),
            "temperatures": [min(self.temperatures), max(self.temperatures), len(self.temperatures)],
            "temperature_starts": self.temperature_starts,
            "models": list(self.models),
        }


StudyConfig.__init__ = renames(seed="random_state")(StudyConfig.__init__)  # type: ignore[method-assign]


@dataclass
class ModelStudy:
    """Everything the study computed for one model.

    Attributes
    ----------
    name, description : str
    methods : list of str
        Short names of the recalibration methods, in the paper's numbering.
    num_bins : tuple of int
        Bin counts of ``values`` (the sweep plus the report bin count).
    values : numpy.ndarray, shape (n_methods, n_metrics, n_bins)
        ``values[m, j, b]``: metric j at ``num_bins[b]`` on method m's test probabilities.
    uncalibrated : numpy.ndarray, shape (n_metrics, n_bins)
        The same for the uncalibrated test probabilities.
    probs : dict of str -> numpy.ndarray (N, K)
        Test probabilities: ``"uncalibrated"`` and each method.
    labels : numpy.ndarray (N,)
        Test labels.
    logits : numpy.ndarray (N, K)
        Uncalibrated test logits (log-probabilities when probabilities were given).
    fit_seconds : dict of str -> float
    sensitivity_spearman, sensitivity_kendall : numpy.ndarray (n_metrics,)
        Bin sensitivity per metric (mean rank correlation across pairs of sweep bin counts).
    corr_spearman, corr_kendall : numpy.ndarray (n_metrics, n_metrics)
        Rank correlation between metric orderings at the report bin count.
    temperature : TemperatureResult
    conditionality : ConditionalityResult
    intervals : Table or None
        Per method: ECE at the report bin count, its 90% basic bootstrap interval and the
        calibration test's p-value (:func:`calibkit.analysis.trust_table.interval_table`, 200
        resamples, the study's seed); written to report.md/html, results.json and
        tables/intervals_<model>.csv.
    """

    name: str
    description: str
    methods: list
    num_bins: tuple
    values: np.ndarray
    uncalibrated: np.ndarray
    probs: dict
    labels: np.ndarray
    fit_seconds: dict
    sweep_bins: tuple
    report_bins: int
    space: Any
    sensitivity_spearman: np.ndarray
    sensitivity_kendall: np.ndarray
    corr_spearman: np.ndarray
    corr_kendall: np.ndarray
    temperature: TemperatureResult
    conditionality: ConditionalityResult
    n_val: int = 0
    logits: np.ndarray | None = None
    intervals: Table | None = None

    def bin_column(self, num_bins: int) -> int:
        """Position of ``num_bins`` in :attr:`num_bins`."""
        return self.num_bins.index(int(num_bins))

    def metric_labels(self) -> list[str]:
        """Paper index (or position) of each metric, as column labels."""
        return [str(s.index if s.index is not None else i) for i, s in enumerate(self.space)]

    # ------------------------------------------------------------------ tables
    def rank_order(self, num_bins: int | None = None) -> Table:
        """The paper's rank-order table at ``num_bins`` (default: the report bin count)."""
        b = self.report_bins if num_bins is None else int(num_bins)
        return rank_order_table(
            self.values[:, :, self.bin_column(b)],
            method_labels=list(range(len(self.methods))),
            metric_labels=self.metric_labels(),
            name=f"rank_order_{self.name}_{b}bins",
            title=f"Rank order of the recalibration methods under each metric ({self.name}, {b} bins)",
        )

    def methods_table(self) -> Table:
        """Method numbering and the named metrics of each method's test outputs (report bins)."""
        j = self.bin_column(self.report_bins)
        pos = [self.space.position(n) for _, n in SUMMARY_METRICS]
        rows, index = [], []
        for i, m in enumerate(["uncalibrated"] + list(self.methods)):
            v = self.uncalibrated[:, j] if i == 0 else self.values[i - 1, :, j]
            acc = float(np.mean(np.argmax(self.probs[m], axis=1) == self.labels))
            rows.append([m] + [float(v[p]) for p in pos] + [acc])
            index.append("-" if i == 0 else str(i - 1))
        return Table(
            name=f"methods_{self.name}",
            title=f"Recalibration methods on the test split ({self.name}, {self.report_bins} bins)",
            index=index,
            columns=["method"] + [lab for lab, _ in SUMMARY_METRICS] + ["accuracy"],
            data=rows,
            index_name="#",
            note="Fitted on the validation split, scored on the test split. # = the paper's method number.",
        )

    def first_counts(self) -> Table:
        """How many metrics rank each method first / last (report bins)."""
        v = self.values[:, :, self.bin_column(self.report_bins)]
        best = np.argmin(v, axis=0)
        worst = np.array([np.flatnonzero(v[:, j] == v[:, j].max())[-1] for j in range(v.shape[1])])
        return Table(
            name=f"first_counts_{self.name}",
            title=(f"How often each method is ranked first and last over the {v.shape[1]} "
                   f"metrics ({self.name})"),
            index=[str(i) for i in range(len(self.methods))],
            columns=["method", "ranked first", "ranked last"],
            data=[[m, int(np.sum(best == i)), int(np.sum(worst == i))] for i, m in enumerate(self.methods)],
            index_name="#",
        )

    def correlation_table(self, method: str = "spearman") -> Table:
        """Rank correlation between every pair of metric orderings (report bins)."""
        c = self.corr_spearman if method == "spearman" else self.corr_kendall
        labels = self.metric_labels()
        return Table(
            name=f"metric_correlation_{method}_{self.name}",
            title=f"{'Spearman' if method == 'spearman' else 'Kendall'} rank correlation between "
            f"the metrics' orderings of the methods ({self.name}, {self.report_bins} bins)",
            index=labels,
            columns=labels,
            data=c,
            index_name="metric",
            floatfmt=".2f",
        )

    def sensitivity_table(self) -> Table:
        """Per-metric bin sensitivity (both correlations)."""
        return Table(
            name=f"bin_sensitivity_per_metric_{self.name}",
            title=(f"Bin sensitivity per metric ({self.name}, bin counts "
                   f"{', '.join(map(str, self.sweep_bins))})"),
            index=self.metric_labels(),
            columns=["metric", "Spearman", "Kendall"],
            data=[[s.name, self.sensitivity_spearman[i], self.sensitivity_kendall[i]]
                  for i, s in enumerate(self.space)],
            index_name="#",
        )


@dataclass
class StudyResult:
    """The complete output of :func:`run_study`.

    Attributes
    ----------
    config : StudyConfig
    models : list of ModelStudy
    label_noise : LabelNoiseResult or None
    source : str
        What the study ran on.
    version : str
        calibkit's version.
    seconds : float
        Wall time of the run.
    """

    config: StudyConfig
    models: list
    label_noise: LabelNoiseResult | None
    source: str
    version: str
    space: Any
    seconds: float = 0.0
    timings: dict = field(default_factory=dict)

    def model(self, name: str) -> ModelStudy:
        """The :class:`ModelStudy` called ``name``."""
        for m in self.models:
            if m.name == name:
                return m
        raise UnknownNameError(f"no model {name!r} in this study (models: {[m.name for m in self.models]})")

    def bin_sensitivity_table(self) -> Table:
        """The paper's rank-correlation table: bin sensitivity by property, one column per model
        and correlation."""
        cols = {}
        for m in self.models:
            cols[f"{m.name} Spearman"] = m.sensitivity_spearman
            cols[f"{m.name} Kendall"] = m.sensitivity_kendall
        return group_by_property(
            cols,
            self.space,
            name="bin_sensitivity",
            title=(
                "Bin sensitivity: mean rank correlation of each metric's method ordering across "
                f"bin counts {', '.join(map(str, self.config.num_bins))}, by property"
            ),
            note=(
                "1 = the ordering of the methods never changes with the number of bins. Spearman "
                "uses the standard formula (squared rank differences; the paper prints |d|); "
                "Kendall is tau-b. Pairs where an ordering is constant are left out."
            ),
        )

    def temperature_table(self) -> Table:
        """The paper's optimisation table (one ECE and one RMSCE column per model)."""
        return temperature_table([m.temperature for m in self.models])

    def tables(self) -> list[Table]:
        """Every table of the report, in report order."""
        out: list[Table] = []
        for m in self.models:
            out += [m.methods_table()] + ([m.intervals] if m.intervals is not None else [])
            out += [m.rank_order(), m.first_counts()]
        out.append(self.bin_sensitivity_table())
        for m in self.models:
            out.append(m.sensitivity_table())
        out.append(self.temperature_table())
        for m in self.models:
            out.append(m.temperature.per_metric_table())
        for m in self.models:
            out.append(m.conditionality.table())
        for m in self.models:
            out += binning_free_study_tables(m)
        if self.label_noise is not None:
            out.append(self.label_noise.table())
        for m in self.models:
            out += [m.correlation_table("spearman"), m.correlation_table("kendall")]
            for b in m.num_bins:
                if b != m.report_bins:
                    out.append(m.rank_order(b))
        return out


def evaluate_methods(
    model: ModelSplits, *, space=None, num_bins: Sequence[int] = (10, 20, 30, 40, 50),
    random_state: int | None = 0, methods=None, progress=None,
) -> tuple[list, np.ndarray, np.ndarray, dict, dict]:
    """Fit every recalibration method on validation, apply to test, evaluate every metric.

    Parameters
    ----------
    model : ModelSplits
    space : MetricSpace, optional
        Default: the paper's 32.
    num_bins : sequence of int, default (10, 20, 30, 40, 50)
    random_state : int or None, default 0
    methods : sequence of (name, factory), optional
        Default ``calibkit.recalibration.PAPER_METHODS``.
    progress : callable, optional
        Called after each method.

    Returns
    -------
    names : list of str
    values : numpy.ndarray (n_methods, n_metrics, n_bins)
    uncalibrated : numpy.ndarray (n_metrics, n_bins)
    probs : dict of str -> (N, K) test probabilities (including ``"uncalibrated"``)
    fit_seconds : dict of str -> float

    Examples
    --------
    >>> from calibkit.analysis.digits import default_models
    >>> m = default_models(0, ["softmax-regression"])[0]
    >>> names, v, u, p, t = evaluate_methods(m, num_bins=(10, 20))
    >>> v.shape
    (8, 32, 2)
    """
    from ..binned.space import evaluate, metric_space
    from ..recalibration import PAPER_METHODS

    as_instance(model, ModelSplits, "model", "from default_models() or load_val_test()")
    sp = metric_space() if space is None else space
    methods = PAPER_METHODS if methods is None else methods
    bins, _ = as_bin_counts(num_bins)
    test, val = model.test, model.val
    probs = {"uncalibrated": np.asarray(test.probs, dtype=np.float64)}
    uncal = evaluate(test.labels, probs["uncalibrated"], space=sp, num_bins=bins).values
    names, values, secs = [], [], {}
    for name, factory in methods:
        t0 = time.perf_counter()
        xv, xt, kind = recalibration_inputs(val, test)
        est = make_estimator(factory, input=kind, random_state=random_state)
        try:
            est.fit(xv, val.labels)
            p = np.asarray(est.predict_proba(xt), dtype=np.float64)
        except CalibkitError as exc:
            # The data cannot support the method (e.g. a class absent from the validation
            # split): the same error, saying which method and model, so the command line
            # reports it as an input error (exit 2), not a crash.
            raise type(exc)(f"recalibration method {name!r} failed on {model.name}: {exc}") from exc
        except Exception as exc:
            raise MethodFailedError(
                f"recalibration method {name!r} failed on {model.name}: {exc}") from exc
        secs[name] = time.perf_counter() - t0
        probs[name] = p
        names.append(name)
        values.append(evaluate(test.labels, p, space=sp, num_bins=bins).values)
        warn_if_worse(name, model.name, values[-1], uncal)
        if progress is not None:
            progress()
    return names, np.stack(values), np.asarray(uncal), probs, secs


def warn_if_worse(method: str, model: str, values: np.ndarray, uncalibrated: np.ndarray) -> bool:
    """Warn (``UserWarning``) when the recalibration ``method`` left ``model``'s test
    predictions worse calibrated than its input: a higher error than the uncalibrated one on
    more than half of the (metric, bin count) values. Returns whether it warned.

    A recalibrator should not make calibration worse; when it does, the study's tables still
    report it, and this says so where it happens (e.g. a likelihood fit pulled by predictions
    that are far off the validation data)."""
    import warnings

    worse = int(np.count_nonzero(values > uncalibrated))
    if worse * 2 <= values.size:
        return False
    warnings.warn(
        f"recalibration method {method!r} made {model} worse calibrated than its input: a "
        f"higher error on {worse} of {values.size} (metric, bin count) values of the test "
        "split", UserWarning, stacklevel=3)
    return True


def run_study(
    models: Sequence[ModelSplits] | ModelSplits | None = None,
    config: StudyConfig | None = None,
    *,
    digits: DigitsSplit | None = None,
    progress: bool | None = False,
) -> StudyResult:
    """Run the paper's analysis and return every number (see the module docstring).

    Parameters
    ----------
    models : ModelSplits or sequence of ModelSplits, optional
        Validation and test outputs of one or more models (e.g. from
        :func:`calibkit.analysis.load_val_test`). Default: the bundled digits models
        (``config.models``), trained with ``config.random_state``.
    config : StudyConfig, optional
        Default ``StudyConfig()``.
    digits : DigitsSplit, optional
        The digits split for the label-noise experiment (default: built from ``config.random_state``
        when the experiment runs).
    progress : bool or None, default False
        A progress bar of the study's steps on stderr, by calibkit's one rule
        (:mod:`calibkit._progress`): None = when stderr is a terminal, True = always.

    Returns
    -------
    StudyResult

    Examples
    --------
    >>> from calibkit.analysis import StudyConfig, run_study
    >>> res = run_study(config=StudyConfig.quick_config())  # doctest: +SKIP
    >>> res.models[0].rank_order().shape  # doctest: +SKIP
    (8, 32)
    """
    from ..binned.spec import metric_space
    from ..recalibration import PAPER_METHODS

    cfg = config or StudyConfig()
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    default = models is None
    if models is None:
        t0 = time.perf_counter()
        digits = digits if digits is not None else load_digits_split(cfg.random_state)
        model_list = default_models(cfg.random_state, cfg.models, split=digits)
        source = (
            "bundled default: scikit-learn digits (fit/validation/test = 898/449/450, stratified, "
            f"seed {cfg.random_state}); models: {', '.join(m.description for m in model_list)}"
        )
        timings["train default models"] = time.perf_counter() - t0
    else:
        model_list = [models] if isinstance(models, ModelSplits) else list(models)
        if not model_list:
            raise InvalidParameterError("run_study: models is empty; pass at least one ModelSplits")
        source = "; ".join(f"{m.name}: {m.description}" for m in model_list)
    run_noise = cfg.label_noise if cfg.label_noise is not None else default
    if run_noise and digits is None:
        digits = load_digits_split(cfg.random_state)

    space = metric_space()
    n_methods = len(PAPER_METHODS)
    total = len(model_list) * (n_methods + len(space) + 2) + (cfg.noise_levels if run_noise else 0)
    bar = Progress(total, "study", progress, unit="steps", delay=0.0)
    studies = []
    try:
        for ms in model_list:
            t0 = time.perf_counter()
            bar.describe(f"{ms.name}: recalibration methods")
            names, values, uncal, probs, secs = evaluate_methods(
                ms, space=space, num_bins=cfg.all_bins, random_state=cfg.random_state, progress=bar.update
            )
            timings[f"{ms.name}: methods + metrics"] = time.perf_counter() - t0
            sweep = [cfg.all_bins.index(b) for b in cfg.num_bins]
            rep = cfg.all_bins.index(int(cfg.report_bins))
            sens_r = bin_sensitivity(values[:, :, sweep], "spearman")
            sens_t = bin_sensitivity(values[:, :, sweep], "kendall")
            corr_r = metric_rank_correlations(values[:, :, rep], "spearman")
            corr_t = metric_rank_correlations(values[:, :, rep], "kendall")
            bar.update()
            t0 = time.perf_counter()
            bar.describe(f"{ms.name}: temperature per metric")
            temp = optimise_temperature_per_metric(
                ms, space=space, num_bins=cfg.report_bins, temperatures=cfg.temperatures,
                random_state=cfg.random_state, n_starts=cfg.temperature_starts, progress=bar.update,
            )
            timings[f"{ms.name}: temperature per metric"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            bar.describe(f"{ms.name}: class conditionality")
            cond = class_conditionality(ms, num_bins=cfg.report_bins, random_state=cfg.random_state)
            timings[f"{ms.name}: class conditionality"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            bar.describe(f"{ms.name}: intervals and calibration tests")
            intervals = interval_table(
                ms.test.labels, probs, num_bins=int(cfg.report_bins), random_state=cfg.random_state,
                name=f"intervals_{ms.name}",
                title=f"{ms.name}: ECE ({cfg.report_bins} bins), 90% interval and calibration "
                      f"test per method")
            timings[f"{ms.name}: intervals and calibration tests"] = time.perf_counter() - t0
            bar.update()
            studies.append(
                ModelStudy(
                    name=ms.name, description=ms.description, methods=names, num_bins=cfg.all_bins,
                    values=values, uncalibrated=uncal, probs=probs, labels=ms.test.labels,
                    fit_seconds=secs, sweep_bins=cfg.num_bins, report_bins=int(cfg.report_bins),
                    space=space, sensitivity_spearman=sens_r, sensitivity_kendall=sens_t,
                    corr_spearman=corr_r, corr_kendall=corr_t, temperature=temp,
                    conditionality=cond, n_val=len(ms.val), logits=np.asarray(ms.test.logits),
                    intervals=intervals,
                )
            )
        noise = None
        if run_noise:
            assert digits is not None  # loaded above when the experiment runs
            t0 = time.perf_counter()
            bar.describe("label noise")
            noise = label_noise_study(
                digits.X_fit, digits.y_fit, digits.X_test, digits.y_test,
                num_levels=cfg.noise_levels, max_level=cfg.max_noise, num_bins=cfg.report_bins,
                importance_threshold=cfg.importance_threshold, random_state=cfg.random_state, progress=bar.update,
            )
            timings["label noise"] = time.perf_counter() - t0
    finally:
        bar.close()
    cfg = replace(cfg, label_noise=bool(run_noise))
    return StudyResult(
        config=cfg, models=studies, label_noise=noise, source=source, version=package_version(),
        space=space, seconds=time.perf_counter() - t_start, timings=timings,
    )
