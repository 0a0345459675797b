"""Arrays from the deep-learning stack: PyTorch / JAX / CuPy tensors and the like to NumPy.

One rule, used by every input check (:mod:`calibkit._validate`):

* a NumPy array is used as is;
* an object on a device other than the CPU (its ``__dlpack_device__()`` is not the CPU, or its
  ``.device.type`` / ``.device.platform`` is not ``"cpu"``) is refused with
  :class:`~calibkit.errors.InputTypeError` saying to move it to the CPU first (calibkit never
  copies from a GPU behind your back);
* an object with ``__array__`` (PyTorch, JAX and most array libraries on the CPU) goes through
  :func:`numpy.asarray`, which shares the tensor's memory when its layout allows;
* else one with ``__dlpack__`` goes through :func:`numpy.from_dlpack` (no copy);
* else one with a ``.numpy()`` method (e.g. TensorFlow eager tensors) is converted by it;
* anything else (lists, scalars) goes through :func:`numpy.asarray`.
"""

from __future__ import annotations

import numpy as np

from .errors import InputTypeError

__all__ = ["to_numpy"]

#: DLPack device type of host memory (``kDLCPU``).
_DLPACK_CPU = 1
_DLPACK_NAMES = {2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi",
                 10: "rocm", 11: "rocm_host", 13: "cuda_managed", 14: "oneapi"}


def _device_name(obj) -> str | None:
    """The device ``obj`` lives on when that is not the CPU, else None."""
    dl = getattr(obj, "__dlpack_device__", None)
    if callable(dl):
        try:
            dev_type = int(dl()[0])
        except Exception:
            dev_type = _DLPACK_CPU
        if dev_type != _DLPACK_CPU:
            return _DLPACK_NAMES.get(dev_type, f"DLPack device type {dev_type}")
    dev = getattr(obj, "device", None)
    if dev is not None and not isinstance(dev, str) and not callable(dev):
        kind = getattr(dev, "type", None) or getattr(dev, "platform", None)
        if isinstance(kind, str) and kind.lower() != "cpu":
            return kind
    elif isinstance(dev, str) and dev and not dev.lower().startswith("cpu"):
        # e.g. TensorFlow's "/job:localhost/replica:0/task:0/device:GPU:0"
        if "gpu" in dev.lower() or "cuda" in dev.lower():
            return dev
    return None


def to_numpy(obj, name: str) -> np.ndarray:
    """``obj`` as a NumPy array, without a copy where its layout allows (see the module doc).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.zeros((2, 3))
    >>> to_numpy(a, "probs") is a
    True
    """
    if isinstance(obj, np.ndarray):
        return obj
    dev = _device_name(obj)
    if dev is not None:
        raise InputTypeError(
            f"{name} is a tensor on the {dev} device; calibkit computes on the CPU: move it there "
            f"first, e.g. {name}.cpu() (PyTorch), jax.device_get({name}) (JAX) or "
            f"{name}.get() (CuPy)"
        )
    try:
        if hasattr(obj, "__array__"):
            return np.asarray(obj)
        if hasattr(obj, "__dlpack__"):
            return np.from_dlpack(obj)
        numpy_method = getattr(obj, "numpy", None)
        if callable(numpy_method):
            return np.asarray(numpy_method())
        return np.asarray(obj)
    except RuntimeError as exc:
        # PyTorch: "Can't call numpy() on Tensor that requires grad".
        hint = f"; call {name}.detach() first" if "grad" in str(exc) else ""
        raise InputTypeError(f"{name} could not be converted to a NumPy array: {exc}{hint}") from exc
