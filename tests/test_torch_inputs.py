"""PyTorch tensors as inputs to calibkit's public functions (calibkit._arraylike).

CPU tensors are read in place (any strides), tensors with gradients are detached, half
precision is converted as calibkit converts every other dtype, a tensor that holds no data is
refused with an InputTypeError, and a device array that can copy itself to the host through
DLPack is accepted.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires

torch = requires("torch")


import calibkit  # noqa: E402
from calibkit._validate import validate_inputs  # noqa: E402
from calibkit.errors import InputTypeError, ShapeMismatchError  # noqa: E402


def _case(n=300, k=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    p = torch.softmax(torch.randn(n, k, generator=g, dtype=torch.float64), 1)
    return torch.randint(0, k, (n,), generator=g), p


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cpu_tensors_give_the_arrays_numbers_without_a_copy(dtype):
    y, p = _case()
    p = p.to(dtype)
    yy, pp = validate_inputs(y, p)
    assert np.shares_memory(pp, p.numpy()) and np.shares_memory(yy, y.numpy())
    for f in (calibkit.ece, calibkit.ace, calibkit.tace, calibkit.sce, calibkit.rmsce):
        assert f(y, p) == f(y.numpy(), p.numpy())
    np.testing.assert_array_equal(calibkit.evaluate(y, p).values,
                                  calibkit.evaluate(y.numpy(), p.numpy()).values)
    conf, pred = p.max(dim=1)
    assert calibkit.ece(confidence=conf, correct=pred == y) == calibkit.ece(y.numpy(), p.numpy())


def test_gradients_strides_and_label_dtypes():
    y, p = _case()
    want = calibkit.ace(y.numpy(), p.numpy())
    assert calibkit.ace(y, p.clone().requires_grad_()) == want  # detached, not refused
    view = p.t().contiguous().t()
    assert not view.is_contiguous() and calibkit.ace(y, view) == want
    for dt in (torch.int32, torch.int16, torch.uint8):
        assert calibkit.ace(y.to(dt), p) == want


def test_half_precision_is_converted_as_calibkit_converts_it():
    y, p = _case()
    h = p.half()
    assert calibkit.ece(y, h) == calibkit.ece(y.numpy(), h.numpy().astype(np.float64))
    b = torch.tensor([[0.5, 0.25, 0.25], [0.125, 0.375, 0.5]]).bfloat16()  # exact in bfloat16
    assert calibkit.sce([0, 2], b) == calibkit.sce([0, 2], b.double().numpy())


def test_swapped_tensors_are_recognised_without_converting_them():
    y, p = _case()
    with pytest.raises(ShapeMismatchError, match="swapped"):
        calibkit.ece(p, y)


def test_a_tensor_without_data_is_refused():
    with pytest.raises(InputTypeError, match="probs could not be converted"):
        calibkit.ece([0, 1], torch.empty(2, 2, device="meta"))


class DeviceArray:
    """An array on a (pretend) CUDA device that copies itself to the host through DLPack."""

    def __init__(self, a):
        self._a = a
        self.copies = 0

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        assert dl_device == (1, 0) and copy is True, "asked for a host copy"
        self.copies += 1
        return self._a.copy().__dlpack__(max_version=max_version)


def test_device_arrays_are_copied_to_the_host_through_dlpack():
    y, p = _case()
    dev = DeviceArray(p.numpy())
    assert calibkit.ece(y, dev) == calibkit.ece(y.numpy(), p.numpy())
    assert dev.copies == 1
