"""Arrays from the deep-learning stack: PyTorch / JAX / CuPy tensors and the like to NumPy.

One rule, used by every input check (:mod:`calibkit._validate`):

* a NumPy array is used as is;
* a PyTorch tensor is detached first (calibkit's results are plain numbers, with no gradient to
  keep); a CPU tensor shares its memory with the array (any strides), a tensor on another
  device (CUDA, MPS, ...) is copied to the host once (``tensor.cpu()``); bfloat16, which NumPy
  lacks, becomes float64 there, as every dtype other than float32/float64 does (docs/spec.md);
* any other object on a device other than the CPU (its ``__dlpack_device__()`` is not the CPU,
  or its ``.device.type`` / ``.device.platform`` is not ``"cpu"``) is copied to the host
  through DLPack (``numpy.from_dlpack(obj, device="cpu")``, which asks the producer for a host
  copy: CuPy, JAX); one that cannot be copied so is refused with
  :class:`~calibkit.errors.InputTypeError` saying how to move it to the CPU first;
* an object with ``__array__`` (JAX and most array libraries on the CPU) goes through
  :func:`numpy.asarray`, which shares the tensor's memory when its layout allows;
* else one with ``__dlpack__`` goes through :func:`numpy.from_dlpack` (no copy);
* else one with a ``.numpy()`` method (e.g. TensorFlow eager tensors) is converted by it;
* anything else (lists, scalars) goes through :func:`numpy.asarray`.

A whole matrix on a GPU costs a copy over the bus (about 170 ms for a (50k, 1000) float32 one).
:func:`calibkit.gce`, the named metrics and :func:`calibkit.evaluate` therefore never reach this
conversion with a PyTorch tensor on a device (:func:`device_tensor`): they compute on the device
(:mod:`calibkit.torch.functional`; only small tables cross). Other functions, and JAX / CuPy
arrays on a device, still take the one host copy.
"""

from __future__ import annotations

import sys

import numpy as np

from .errors import InputTypeError

__all__ = ["to_numpy", "dtype_kind", "device_tensor", "device_path"]

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


def _is_torch(obj) -> bool:
    """Whether ``obj`` is a PyTorch tensor (without importing torch)."""
    mod = type(obj).__module__
    return (mod == "torch" or mod.startswith("torch.")) and hasattr(obj, "detach")


def device_tensor(obj) -> bool:
    """Whether ``obj`` is a PyTorch tensor that the public functions compute on its own device
    (:mod:`calibkit.torch.functional`): one on a device other than the CPU (a meta tensor, which
    holds no data, is not), or a CPU one while ``calibkit.torch.tables.TORCH_OPS_ON_CPU`` is set
    (the tests' switch to the device code). Reads the type's module first: imports nothing,
    and refuses a NumPy array at the cost of one attribute read.

    Examples
    --------
    >>> device_tensor(np.zeros(3)), device_tensor([0.5, 0.5])
    (False, False)
    """
    if not _is_torch(obj):
        return False
    kind = obj.device.type
    if kind == "cpu":
        tables = sys.modules.get("calibkit.torch.tables")
        return bool(getattr(tables, "TORCH_OPS_ON_CPU", False))
    return kind != "meta"


def device_path(name: str):
    """The device path of the public function ``name`` (``"gce"``, ``"evaluate"``):
    ``calibkit.torch.functional.device_<name>``, which returns None for the calls it leaves to
    the host path.

    The engine (:mod:`calibkit.binned`) calls it only for a :func:`device_tensor`, so torch is
    already imported; ``calibkit.torch`` (the optional extra, which reads the engine) is
    imported here by name, on first use, as ``calibkit.__getattr__`` imports its submodules:
    the engine has no import of it, and imports still go one way (docs/architecture.md).
    """
    import importlib

    return getattr(importlib.import_module("calibkit.torch.functional"), f"device_{name}")


def _torch_numpy(t) -> np.ndarray:
    """A PyTorch tensor as NumPy: detached, on the host, bfloat16 as float64."""
    t = t.detach()
    if str(t.dtype) == "torch.bfloat16":
        t = t.cpu().double()
    if t.device.type != "cpu":
        t = t.cpu()
    return t.resolve_conj().resolve_neg().numpy()


def dtype_kind(obj) -> str | None:
    """The NumPy dtype kind (``"f"``, ``"i"``, ``"u"``, ``"b"``, ``"c"``) of an array or tensor,
    read from its dtype without converting it (None when it has no readable dtype): PyTorch
    dtypes have no ``.kind``, and converting a GPU tensor to learn its kind would copy it.

    Examples
    --------
    >>> dtype_kind(np.zeros(2, dtype=np.float32)), dtype_kind([1, 2])
    ('f', None)
    """
    dtype = getattr(obj, "dtype", None)
    kind = getattr(dtype, "kind", None)
    if isinstance(kind, str):
        return kind
    if _is_torch(obj) and dtype is not None:
        if dtype.is_complex:
            return "c"
        if dtype.is_floating_point:
            return "f"
        if str(dtype) == "torch.bool":
            return "b"
        return "u" if str(dtype) in ("torch.uint8", "torch.uint16", "torch.uint32",
                                     "torch.uint64") else "i"
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
    if _is_torch(obj):
        try:
            return _torch_numpy(obj)
        except (RuntimeError, TypeError) as exc:  # e.g. a meta tensor holds no data
            raise InputTypeError(f"{name} could not be converted to a NumPy array: {exc}") from exc
    dev = _device_name(obj)
    if dev is not None:
        try:
            return np.from_dlpack(obj, device="cpu", copy=True)
        except Exception:
            pass
        raise InputTypeError(
            f"{name} is a tensor on the {dev} device that calibkit could not copy to the host; "
            f"move it there first, e.g. {name}.cpu() (PyTorch), jax.device_get({name}) (JAX) "
            f"or {name}.get() (CuPy)"
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
        # e.g. "Can't call numpy() on Tensor that requires grad" from a tensor-like object
        hint = f"; call {name}.detach() first" if "grad" in str(exc) else ""
        raise InputTypeError(f"{name} could not be converted to a NumPy array: {exc}{hint}") from exc
