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
                    np.testing.assert_array_equal(got[0], want.counts)
                    np.testing.assert_array_equal(got[2], want.sum_outcome)
                    np.testing.assert_allclose(got[1], want.sum_score, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_metric_on_the_gpu_equals_calibkit(cifar, dtype):
    y, p = cifar
    p = p.astype(dtype)
    m = CalibrationError(NAMED, num_bins=(10, 15), num_classes=100).to(CUDA)
    for s in (slice(0, 2000), slice(2000, 5000)):
        m.update(torch.from_numpy(p[s]).to(CUDA), torch.from_numpy(y[s]).to(CUDA))
    out = m.compute()
    assert out["ECE@15"].device.type == "cuda"
    np.testing.assert_allclose(m.values(), calibkit.evaluate(y, p, NAMED, (10, 15)).values,
                               rtol=0, atol=1e-12)
    ev = evaluate(torch.from_numpy(p).to(CUDA), torch.from_numpy(y).to(CUDA), NAMED, 15)
    np.testing.assert_allclose(ev.values, calibkit.evaluate(y, p, NAMED, 15).values, rtol=0,
                               atol=1e-12)


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


def test_public_functions_take_gpu_tensors(cifar):
    y, p = cifar
    pc, yc = torch.from_numpy(p).to(CUDA), torch.from_numpy(y).to(CUDA)
    assert calibkit.ece(yc, pc) == calibkit.ece(y, p)
    assert calibkit.ace(yc, pc.requires_grad_()) == calibkit.ace(y, p)
