"""Numbers and figures of the "Which metric to report" page, computed on real model outputs.

Run by the site's configuration (``docs/site/conf.py``) on every build, so nothing can go stale:
it reads the real network outputs in ``$CALIBKIT_SHARED_DATA`` or ``../shared/data`` (beside the
repository; never copied into it) and writes Markdown tables, PNG figures and ``numbers.json``
into the output folder, which the page includes. Where the data are absent it writes a note
saying so, and the page still builds.

About a minute on 2 cores. ``python docs/site/scripts/which_metric.py OUT`` runs it alone.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import calibkit
from calibkit.analysis import bin_sensitivity, metric_rank_correlations

ROOT = Path(__file__).resolve().parents[3]
SEED = 0
#: the bin counts of the paper's study, and a wider sweep for the figure
PAPER_BINS = (10, 20, 30, 40, 50)
SWEEP_BINS = (5, 10, 15, 20, 30, 40, 50, 75, 100)
#: sizes of the subsamples (bias by the number of examples), and draws per size
SIZES = (250, 500, 1000, 2000, 5000, 10000)
DRAWS = 10
RESAMPLES = 200

#: full-matrix models: file stem -> short name
FULL = {
    "kangsepp__densenet40_c10": "DenseNet-40 / CIFAR-10",
    "verified_calibration__cifar10_vgg": "VGG / CIFAR-10",
    "netcal__wideresnet-16-4-cifar-10": "WRN-16-4 / CIFAR-10",
    "netcal__lenet-5-cifar-10": "LeNet-5 / CIFAR-10",
    "netcal__densenet-bc-100-cifar-100": "DenseNet-BC-100 / CIFAR-100",
    "netcal__wideresnet-16-4-cifar-100": "WRN-16-4 / CIFAR-100",
    "netcal__lenet-5-cifar-100": "LeNet-5 / CIFAR-100",
    "label_errors__cifar10": "cross-validated / CIFAR-10",
    "label_errors__mnist": "cross-validated / MNIST",
    "label_errors__20news": "cross-validated / 20 Newsgroups",
    "label_errors__imdb": "cross-validated / IMDB",
}
#: where each file's outputs were published (the data folder's README)
SOURCES = {
    "hollance": "hollance/reliability-diagrams",
    "kangsepp": "markus93/NN_calibration",
    "verified_calibration": "p-lambda/verified_calibration",
    "netcal": "EFS-OpenSource/calibration-framework",
    "label_errors": "cleanlab/label-errors (cross-validated)",
}
#: the metrics compared on full probability matrices
FULL_METRICS = ("ECE", "CCE", "SCE", "ACE", "TACE", "RMSCE", "MCE", "smECE", "KS", "CORP MCB")
#: the metrics compared on top-label records (the ImageNet model zoo)
TOP_METRICS = ("ECE", "CCE", "RMSCE", "MCE", "smECE", "KS", "CORP MCB")


def data_dir() -> Path:
    return Path(os.environ.get("CALIBKIT_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _full(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(path) as z:
        labels = z["labels"].astype(np.int64)
        probs = calibkit.softmax(z["logits"]) if "logits" in z.files else z["probs"]
    return labels, np.ascontiguousarray(probs, dtype=np.float64)


def _top(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        labels = z["labels"].astype(np.int64)
        pred = z["pred"].astype(np.int64)
        return {"confidence": z["confidence"].astype(np.float64), "correct": pred == labels,
                "predicted": pred}


def full_metrics(labels, probs, num_bins=15) -> dict[str, float]:
    d = {name: float(getattr(calibkit, name.lower())(labels, probs, num_bins=num_bins))
         for name in ("ECE", "CCE", "SCE", "ACE", "TACE", "RMSCE", "MCE")}
    d["smECE"] = float(calibkit.smece(labels, probs))
    d["KS"] = float(calibkit.ksce(labels, probs))
    d["CORP MCB"] = float(calibkit.decompose(labels, probs).miscalibration)
    return d


def top_metrics(r: dict[str, np.ndarray], num_classes: int, num_bins=15) -> dict[str, float]:
    c, ok, pred = r["confidence"], r["correct"], r["predicted"]
    return {
        "ECE": float(calibkit.ece(confidence=c, correct=ok, num_bins=num_bins)),
        "CCE": float(calibkit.cce(confidence=c, correct=ok, predicted=pred,
                                  num_classes=num_classes, num_bins=num_bins)),
        "RMSCE": float(calibkit.rmsce(confidence=c, correct=ok, num_bins=num_bins)),
        "MCE": float(calibkit.mce(confidence=c, correct=ok, num_bins=num_bins)),
        "smECE": float(calibkit.smece(confidence=c, correct=ok)),
        "KS": float(calibkit.ksce(confidence=c, correct=ok)),
        "CORP MCB": float(calibkit.decompose(confidence=c, correct=ok).miscalibration),
    }


# ---------------------------------------------------------------------------------------------
# Markdown output


def _fmt(v: float, digits: int = 4) -> str:
    return "n/a" if not np.isfinite(v) else f"{v:.{digits}f}"


def md_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def corr_table(names, corr) -> str:
    rows = [[f"**{a}**"] + [_fmt(corr[i, j], 2) for j in range(len(names))]
            for i, a in enumerate(names)]
    return md_table([""] + list(names), rows)


# ---------------------------------------------------------------------------------------------
# The studies


def ranking(models: dict[str, dict[str, float]], metrics) -> tuple[np.ndarray, str]:
    values = np.array([[models[m][k] for k in metrics] for m in models])
    corr = metric_rank_correlations(values, "spearman")
    return corr, corr_table(metrics, corr)


def values_table(models: dict[str, dict[str, float]], metrics) -> str:
    rows = [[name] + [_fmt(v[k]) for k in metrics] for name, v in models.items()]
    return md_table(["model"] + list(metrics), rows)


def best_pick_table(models: dict[str, dict[str, float]], metrics) -> str:
    names = list(models)
    rows = []
    for k in metrics:
        v = np.array([models[m][k] for m in names])
        order = np.argsort(v, kind="stable")
        rows.append([k, names[order[0]], names[order[-1]]])
    return md_table(["metric", "best calibrated", "worst calibrated"], rows)


def sensitivity_full(full_data) -> tuple[dict[str, float], dict]:
    """Mean rank correlation of each metric's ordering of the models across bin counts, and
    each metric's value at every bin count of the sweep (for the figure)."""
    space_names = ("ECE", "CCE", "SCE", "ACE", "TACE", "RMSCE")
    per_model = {}
    for name, (labels, probs) in full_data.items():
        ev = calibkit.evaluate(labels, probs, num_bins=SWEEP_BINS)
        per_model[name] = {k: [ev.get(k, b) for b in SWEEP_BINS] for k in space_names}
    idx = [SWEEP_BINS.index(b) for b in PAPER_BINS]
    values = np.array([[[per_model[m][k][i] for i in idx] for k in space_names]
                       for m in per_model])
    sens = bin_sensitivity(values, "spearman")
    return dict(zip(space_names, sens.tolist())), per_model


def sensitivity_top(top_data, num_classes) -> tuple[dict[str, float], dict]:
    names = ("ECE", "CCE", "RMSCE", "MCE")
    per_model = {}
    for name, r in top_data.items():
        per_model[name] = {k: [top_metrics_binned(r, num_classes, b)[k] for b in SWEEP_BINS]
                           for k in names}
    idx = [SWEEP_BINS.index(b) for b in PAPER_BINS]
    values = np.array([[[per_model[m][k][i] for i in idx] for k in names] for m in per_model])
    sens = bin_sensitivity(values, "spearman")
    return dict(zip(names, sens.tolist())), per_model


_BINNED_CACHE: dict = {}


def top_metrics_binned(r, num_classes, b) -> dict[str, float]:
    key = (id(r), b)
    if key not in _BINNED_CACHE:
        c, ok, pred = r["confidence"], r["correct"], r["predicted"]
        _BINNED_CACHE[key] = {
            "ECE": calibkit.ece(confidence=c, correct=ok, num_bins=b),
            "CCE": calibkit.cce(confidence=c, correct=ok, predicted=pred,
                                num_classes=num_classes, num_bins=b),
            "RMSCE": calibkit.rmsce(confidence=c, correct=ok, num_bins=b),
            "MCE": calibkit.mce(confidence=c, correct=ok, num_bins=b),
        }
    return _BINNED_CACHE[key]


def subsampling(labels, probs, rng) -> dict[str, dict[int, tuple[float, float]]]:
    """Mean and std over DRAWS subsamples of each size: with the real labels, and with labels
    drawn from the model's own probabilities (a calibrated model, so the true error is 0)."""
    n = len(labels)
    u = rng.uniform(size=(n, 1))
    drawn = np.minimum((probs.cumsum(axis=1) < u).sum(axis=1), probs.shape[1] - 1)
    out: dict[str, dict[int, tuple[float, float]]] = {}
    metrics = ("ECE", "ACE", "RMSCE", "smECE", "KS")
    for kind, y in (("real", labels), ("drawn", drawn)):
        for k in metrics:
            out[f"{kind}:{k}"] = {}
        for size in SIZES:
            if size > n:
                continue
            vals = {k: [] for k in metrics}
            for _ in range(DRAWS):
                rows = rng.choice(n, size=size, replace=False)
                yy, pp = y[rows], probs[rows]
                vals["ECE"].append(calibkit.ece(yy, pp))
                vals["ACE"].append(calibkit.ace(yy, pp))
                vals["RMSCE"].append(calibkit.rmsce(yy, pp))
                vals["smECE"].append(calibkit.smece(yy, pp))
                vals["KS"].append(calibkit.ksce(yy, pp))
            for k in metrics:
                out[f"{kind}:{k}"][size] = (float(np.mean(vals[k])), float(np.std(vals[k])))
    return out


def intervals(cases) -> list[list[str]]:
    rows = []
    for name, kwargs, metrics in cases:
        for metric in metrics:
            ci = calibkit.confidence_interval(**kwargs, metric=metric, n_resamples=RESAMPLES,
                                              random_state=SEED)
            width = ci.high - ci.low
            rel = width / ci.value if ci.value > 0 else float("nan")
            rows.append([name, metric, _fmt(ci.value), _fmt(ci.estimate),
                         f"[{_fmt(ci.low)}, {_fmt(ci.high)}]",
                         _fmt(width), "n/a" if not np.isfinite(rel) else f"{100 * rel:.0f} %"])
    return rows


# ---------------------------------------------------------------------------------------------
# Figures


def figure_bins(per_model_full, per_model_top, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    ax = axes[0]
    model = "DenseNet-40 / CIFAR-10"
    if model in per_model_full:
        for k, v in per_model_full[model].items():
            ax.plot(SWEEP_BINS, v, marker="o", ms=3, label=k)
        ax.set_title(f"{model}: error vs bins")
    ax.set_xlabel("number of bins")
    ax.set_ylabel("calibration error")
    ax.legend(fontsize=7, ncol=2, loc="upper right", bbox_to_anchor=(1.0, 0.9))
    ax = axes[1]
    for name, v in per_model_top.items():
        ax.plot(SWEEP_BINS, v["ECE"], marker="o", ms=2, lw=1, label=name)
    ax.set_title("ImageNet model zoo: top-label ECE vs bins")
    ax.set_xlabel("number of bins")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "bins.png", dpi=100)
    plt.close(fig)


def figure_sizes(sub, model: str, out: Path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=False)
    for ax, kind, title in ((axes[0], "real", f"{model}: real labels"),
                            (axes[1], "drawn", "labels drawn from its probabilities (true error 0)")):
        for key, by_size in sub.items():
            if not key.startswith(kind + ":"):
                continue
            sizes = sorted(by_size)
            mean = np.array([by_size[s][0] for s in sizes])
            std = np.array([by_size[s][1] for s in sizes])
            line, = ax.plot(sizes, mean, marker="o", ms=3, label=key.split(":")[1])
            ax.fill_between(sizes, mean - std, mean + std, color=line.get_color(), alpha=0.15)
        ax.set_xscale("log")
        ax.set_xlabel("number of examples")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("calibration error (mean, +-1 std)")
    fig.tight_layout()
    fig.savefig(out / "sizes.png", dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------


#: What the page's typed recommendation says, as conditions on the computed numbers: the build
#: fails (rather than publish a recommendation its own tables contradict) if one stops holding.
CLAIMS = {
    "top-label ECE orders the ImageNet zoo as smooth ECE does (Spearman >= 0.9)":
        lambda n: n["top_ece_smece"] >= 0.9,
    "top-label ECE orders the full-matrix models as smooth ECE does (Spearman >= 0.85)":
        lambda n: n["full_ece_smece"] >= 0.85,
    "ECE's ordering barely moves with the bin count (mean Spearman >= 0.95 on both sets)":
        lambda n: min(n["sens_top"]["ECE"], n["sens_full"]["ECE"]) >= 0.95,
    "SCE and ACE order models unlike ECE (Spearman < 0.7)":
        lambda n: max(n["full_ece_sce"], n["full_ece_ace"]) < 0.7,
    "class-conditional ECE agrees only moderately with ECE (Spearman < 0.95)":
        lambda n: n["top_ece_cce"] < 0.95,
    "the bias on a calibrated model shrinks with the number of examples":
        lambda n: n["drawn_ece_1000"] > n["drawn_ece_10000"],
}


def check_claims(numbers: dict) -> None:
    broken = [claim for claim, holds in CLAIMS.items() if not holds(numbers)]
    if broken:
        raise RuntimeError("docs/guide/which-metric.md recommends what the numbers no longer "
                           "support: " + "; ".join(broken))


def absent(out: Path, where: Path) -> None:
    note = (f"```{{note}}\nThe real model outputs were absent when this site was built (looked in "
            f"`{where}`; set `CALIBKIT_SHARED_DATA`), so this page has no measured numbers. "
            "The recommendation below rests on them as measured where the data are present.\n```\n")
    for name in ("summary", "rank_top", "rank_full", "values_top", "values_full", "picks",
                 "bins", "sizes", "intervals", "agreement", "headline"):
        (out / f"{name}.md").write_text(note if name == "summary" else "")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for name in ("bins", "sizes"):  # the page's figures, saying why they are empty
        fig, ax = plt.subplots(figsize=(6, 0.8))
        ax.text(0.5, 0.5, f"real model outputs absent from {where}", ha="center", va="center")
        ax.set_axis_off()
        fig.savefig(out / f"{name}.png", dpi=100)
        plt.close(fig)
    (out / "numbers.json").write_text(json.dumps({"data": False}))


def main(out: Path) -> dict:
    t0 = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():  # nothing of an earlier build survives
        old.unlink()
    where = data_dir()
    full_files = {stem: where / f"{stem}.npz" for stem in FULL}
    top_files = sorted(where.glob("hollance__ImageNet_*.npz"))
    if not where.is_dir() or not top_files or not all(p.exists() for p in full_files.values()):
        absent(out, where)
        return {"data": False}
    rng = np.random.default_rng(SEED)
    numbers: dict = {"data": True}

    full_data = {FULL[stem]: _full(p) for stem, p in full_files.items()}
    top_data = {p.stem.split("__")[-1]: _top(p) for p in top_files}
    full_vals = {name: full_metrics(*d) for name, d in full_data.items()}
    top_vals = {name: top_metrics(r, 1000) for name, r in top_data.items()}

    sizes_table = md_table(
        ["models", "examples each", "classes", "outputs", "published by"],
        [[f"{len(top_data)} ImageNet classifiers (timm, torchvision)", "50,000", "1000",
          "top-label records (label, prediction, confidence)", SOURCES["hollance"]]]
        + [[FULL[stem], f"{len(full_data[FULL[stem]][0]):,}",
            str(full_data[FULL[stem]][1].shape[1]), "probability matrix",
            SOURCES[stem.split("__")[0]]] for stem in FULL])
    (out / "summary.md").write_text(sizes_table)

    corr_top, t = ranking(top_vals, TOP_METRICS)
    (out / "rank_top.md").write_text(t)
    corr_full, t = ranking(full_vals, FULL_METRICS)
    (out / "rank_full.md").write_text(t)
    (out / "values_top.md").write_text(values_table(top_vals, TOP_METRICS))
    (out / "values_full.md").write_text(values_table(full_vals, FULL_METRICS))
    (out / "picks.md").write_text(best_pick_table(top_vals, TOP_METRICS))

    def offdiag_min(corr):
        c = corr[~np.eye(len(corr), dtype=bool)]
        return float(np.nanmin(c))

    numbers["rank_top_min"] = offdiag_min(corr_top)
    numbers["rank_full_min"] = offdiag_min(corr_full)
    ti = {k: i for i, k in enumerate(TOP_METRICS)}
    fi = {k: i for i, k in enumerate(FULL_METRICS)}
    numbers["top_ece_smece"] = float(corr_top[ti["ECE"], ti["smECE"]])
    numbers["top_ece_cce"] = float(corr_top[ti["ECE"], ti["CCE"]])
    numbers["top_ece_mce"] = float(corr_top[ti["ECE"], ti["MCE"]])
    numbers["full_ece_sce"] = float(corr_full[fi["ECE"], fi["SCE"]])
    numbers["full_ece_ace"] = float(corr_full[fi["ECE"], fi["ACE"]])
    numbers["full_ece_smece"] = float(corr_full[fi["ECE"], fi["smECE"]])
    numbers["full_ace_tace"] = float(corr_full[fi["ACE"], fi["TACE"]])

    # -- bins
    sens_full, per_full = sensitivity_full(full_data)
    sens_top, per_top = sensitivity_top(top_data, 1000)
    rows = [[k, _fmt(sens_top.get(k, float("nan")), 3), _fmt(sens_full.get(k, float("nan")), 3)]
            for k in ("ECE", "CCE", "SCE", "ACE", "TACE", "RMSCE", "MCE")]
    bins_md = md_table(["metric", "ImageNet zoo (top-label)", "full-matrix models"], rows)
    model = "DenseNet-40 / CIFAR-10"
    rows = [[k] + [_fmt(v, 4) for v in per_full[model][k]] for k in per_full[model]]
    bins_md += f"\nThe values for {model} at each bin count:\n\n"
    bins_md += md_table(["metric"] + [str(b) for b in SWEEP_BINS], rows)
    (out / "bins.md").write_text(bins_md)
    numbers["sens_top"] = sens_top
    numbers["sens_full"] = sens_full
    ece15 = per_full[model]["ECE"][SWEEP_BINS.index(15)]
    ece100 = per_full[model]["ECE"][SWEEP_BINS.index(100)]
    numbers["densenet_ece_15_100"] = [ece15, ece100]
    figure_bins(per_full, per_top, out)

    # -- examples
    labels, probs = full_data[model]
    sub = subsampling(labels, probs, rng)
    rows = []
    for key, by_size in sub.items():
        kind, metric = key.split(":")
        rows.append([metric, "real" if kind == "real" else "drawn (true 0)"]
                    + [f"{by_size[s][0]:.4f}" for s in SIZES if s in by_size])
    (out / "sizes.md").write_text(
        md_table(["metric", "labels"] + [f"n={s:,}" for s in SIZES if s <= len(labels)], rows))
    numbers["drawn_ece_1000"] = sub["drawn:ECE"][1000][0]
    numbers["drawn_smece_1000"] = sub["drawn:smECE"][1000][0]
    numbers["drawn_ece_10000"] = sub["drawn:ECE"][10000][0]
    figure_sizes(sub, model, out)

    # -- intervals
    lab, pr = full_data[model]
    lab100, pr100 = full_data["DenseNet-BC-100 / CIFAR-100"]
    resnet = top_data.get("resnet101", next(iter(top_data.values())))
    cases = [
        (model, {"labels": lab, "probs": pr},
         ("ECE", "CCE", "SCE", "ACE", "TACE", "RMSCE", "smece")),
        ("DenseNet-BC-100 / CIFAR-100", {"labels": lab100, "probs": pr100},
         ("ECE", "CCE", "SCE", "TACE", "RMSCE")),
        ("ResNet-101 / ImageNet", {"confidence": resnet["confidence"],
                                   "correct": resnet["correct"]}, ("ECE", "RMSCE", "smece")),
    ]
    rows = intervals(cases)
    (out / "intervals.md").write_text(
        md_table(["model", "metric", "plug-in value", "bias-corrected", "90 % interval", "width",
                  "width / value"], rows))
    numbers["intervals"] = rows

    # -- binning-free agreement
    rows = []
    for k in ("smECE", "KS", "CORP MCB"):
        rows.append([k] + [_fmt(corr_full[fi[k], fi[m]], 2)
                           for m in ("ECE", "CCE", "SCE", "ACE", "TACE", "RMSCE", "MCE")]
                    + [_fmt(corr_top[ti[k], ti["ECE"]], 2), _fmt(corr_top[ti[k], ti["RMSCE"]], 2)])
    (out / "agreement.md").write_text(md_table(
        ["binning-free", "ECE", "CCE", "SCE", "ACE", "TACE", "RMSCE", "MCE",
         "ECE (ImageNet)", "RMSCE (ImageNet)"], rows))

    # -- the headline sentence of the recommendation
    head = (
        f"Across the {len(top_data)} ImageNet models, ECE (15 bins) orders the models as smooth ECE "
        f"does with Spearman {numbers['top_ece_smece']:.2f}, and as class-conditional ECE does "
        f"with {numbers['top_ece_cce']:.2f}; its ordering of the zoo at 10 to 50 bins agrees "
        f"with itself at {sens_top['ECE']:.2f} on average. On labels drawn from DenseNet-40's own "
        f"probabilities (a calibrated model, true error 0), ECE reads "
        f"{numbers['drawn_ece_1000']:.4f} at 1,000 examples and "
        f"{numbers['drawn_ece_10000']:.4f} at 10,000: below a few thousand examples the bias is "
        "as large as the differences between good models, which is why the interval belongs "
        "beside the number.\n")
    (out / "headline.md").write_text(head)

    check_claims(numbers)
    numbers["seconds"] = round(time.perf_counter() - t0, 1)
    (out / "numbers.json").write_text(json.dumps(numbers, indent=1, default=float))
    return numbers


if __name__ == "__main__":
    result = main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "_generated"
                  / "which_metric")
    print(json.dumps({k: v for k, v in result.items() if k != "intervals"}, indent=1))
