"""calibkit.torch on a CUDA device: the same numbers as on the CPU (run where a GPU is).

Skipped without CUDA (CI has none); a session lent a GPU runs it beside
benches/gpu_calibration.py: ``python -m pytest -q tests/test_torch_cuda.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_shared, requires

torch = requires("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)


import calibkit  # noqa: E402
from calibkit.errors import InputTypeError, InvalidProbabilitiesError  # noqa: E402
from calibkit.torch import CalibrationError, evaluate  # noqa: E402
from calibkit.torch.tables import Scores, adaptive_table, even_table  # noqa: E402

NAMED = ["ECE", "ACE", "TACE", "SCE", "RMSCE", "CCE", "MCE"]
CUDA = torch.device("cuda")


@pytest.fixture(scope="module")
def cifar():
    d = load_shared("netcal__densenet-bc-100-cifar-100.npz")
    return d["labels"][:5000], d["probs"][:5000]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tables_on_the_gpu_equal_the_engine(cifar, dtype):
    y, p = cifar
    p = p.astype(dtype)
    sc = Scores.of_matrix(torch.from_numpy(p).to(CUDA), torch.from_numpy(y).to(CUDA))
    for mp, cc in [(True, False), (True, True), (False, False), (False, True)]:
        got_a = adaptive_table(sc, max_prob=mp, class_conditional=cc, thresholds=(0.0, 0.01),
                               num_bins=(10, 15))
        for t in (0.0, 0.01):
            for b in (10, 15):
                for binning in ("even", "adaptive"):
                    want = calibkit.calibration_bins(y, p, binning=binning, max_prob=mp,
                                                     class_conditional=cc, threshold=t,
                                                     num_bins=b)
                    if binning == "even":
                        got = [x.cpu().numpy() for x in even_table(
                            sc, max_prob=mp, class_conditional=cc, threshold=t, num_bins=b)]
                    else:
                        got = got_a[(t, b)]
                    # bit for bit: counts, outcome sums and the score sums' exact units
                    for a, e in zip(got, (want.counts, want.sum_score, want.sum_outcome)):
                        np.testing.assert_array_equal(
                            np.asarray(a, np.float64).view(np.int64),
                            np.asarray(e, np.float64).view(np.int64))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_metric_on_the_gpu_equals_calibkit(cifar, dtype):
    y, p = cifar
    p = p.astype(dtype)
    m = CalibrationError(NAMED, num_bins=(10, 15), num_classes=100).to(CUDA)
    for s in (slice(0, 2000), slice(2000, 5000)):
        m.update(torch.from_numpy(p[s]).to(CUDA), torch.from_numpy(y[s]).to(CUDA))
    out = m.compute()
    assert out["ECE@15"].device.type == "cuda"
    # the GPU's tables are the engine's bits, so the values are too, for any batching
    np.testing.assert_array_equal(m.values(), calibkit.evaluate(y, p, NAMED, (10, 15)).values)
    ev = evaluate(torch.from_numpy(p).to(CUDA), torch.from_numpy(y).to(CUDA), NAMED, 15)
    np.testing.assert_array_equal(ev.values, calibkit.evaluate(y, p, NAMED, 15).values)
    # under torch.use_deterministic_algorithms (Lightning's deterministic=True) too
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        ev = evaluate(torch.from_numpy(p).to(CUDA), torch.from_numpy(y).to(CUDA), NAMED, 15)
    finally:
        torch.use_deterministic_algorithms(was)
    np.testing.assert_array_equal(ev.values, calibkit.evaluate(y, p, NAMED, 15).values)


def test_gpu_inputs_checked_on_the_device(cifar):
    y, p = cifar
    pc, yc = torch.from_numpy(p[:100]).to(CUDA), torch.from_numpy(y[:100]).to(CUDA)
    bad = pc.clone()
    bad[3, 3] = float("nan")
    with pytest.raises(InvalidProbabilitiesError):
        CalibrationError().to(CUDA).update(bad, yc)
    with pytest.raises(InputTypeError, match="different devices"):
        CalibrationError().update(pc, yc.cpu())
    m = CalibrationError().to(CUDA)
    with pytest.raises(InputTypeError, match="metric.to"):
        m.update(pc.cpu(), yc.cpu())


NAMED_FUNCTIONS = {"ECE": calibkit.ece, "ACE": calibkit.ace, "TACE": calibkit.tace,
                   "SCE": calibkit.sce, "RMSCE": calibkit.rmsce, "CCE": calibkit.cce,
                   "MCE": calibkit.mce}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_public_functions_compute_gpu_tensors_on_the_gpu(cifar, dtype, monkeypatch):
    """calibkit.gce / the named metrics / calibkit.evaluate of GPU tensors: the device path,
    equal to NumPy's result, with no matrix (nor (N,) vector) copied to the host."""
    import calibkit._arraylike as arraylike

    y, p = cifar
    p = p.astype(dtype)
    pc, yc = torch.from_numpy(p).to(CUDA), torch.from_numpy(y).to(CUDA)
    crossed = []
    real_cpu = torch.Tensor.cpu

    def cpu(self, *a, **k):
        crossed.append(self.numel())
        return real_cpu(self, *a, **k)

    def refuse(t):
        raise AssertionError("calibkit._arraylike converted a GPU tensor")

    monkeypatch.setattr(torch.Tensor, "cpu", cpu)
    monkeypatch.setattr(arraylike, "_torch_numpy", refuse)
    for name, f in NAMED_FUNCTIONS.items():
        assert abs(f(yc, pc) - f(y, p)) <= 1e-12, name
    assert abs(calibkit.ace(yc, pc.clone().requires_grad_()) - calibkit.ace(y, p)) <= 1e-12
    ev = calibkit.evaluate(yc, pc, num_bins=(10, 15))
    np.testing.assert_allclose(ev.values, calibkit.evaluate(y, p, num_bins=(10, 15)).values,
                               rtol=0, atol=1e-12)
    assert max(crossed) < pc.numel() // 4
    w = np.random.default_rng(0).uniform(0, 2, size=y.size)
    assert abs(calibkit.gce(yc, pc, sample_weight=torch.from_numpy(w).to(CUDA), norm="l2")
               - calibkit.gce(y, p, sample_weight=w, norm="l2")) <= 1e-12
    conf, ok = pc.max(dim=1)[0], pc.argmax(dim=1) == yc
    assert abs(calibkit.ece(confidence=conf, correct=ok)
               - calibkit.ece(confidence=p.max(axis=1), correct=p.argmax(axis=1) == y)) <= 1e-12


def test_public_functions_keep_a_host_path_for_the_rest(cifar):
    y, p = cifar
    pc = torch.from_numpy(p[:50]).to(CUDA)
    ym = (p[:50] > 0.01).astype(np.int64)  # a multilabel label matrix: the host copy
    assert abs(calibkit.sce(torch.from_numpy(ym).to(CUDA), pc) - calibkit.sce(ym, p[:50])) <= 1e-12
    with pytest.raises(InvalidProbabilitiesError):
        calibkit.ece(torch.from_numpy(y[:50]).to(CUDA), pc * 2)
