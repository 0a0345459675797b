"""Two processes synchronised with gloo give the one-process value of CalibrationError.

Each process updates with its shard (the second one, in one case, with nothing at all), and
``compute()`` syncs the state across both before reducing; the value must equal calibkit on
all the rows (1e-12), for the torchmetrics metric and for the protocol used without
torchmetrics, through the engine's path and the torch-ops path.
"""

from __future__ import annotations

import socket

import numpy as np
import pytest
from conftest import requires, shared_data_path

torch = requires("torch")
dist = requires("torch.distributed")


import calibkit  # noqa: E402

METRICS = ["ECE", "ACE", "TACE", "SCE", "RMSCE", "CCE"]
CASES = [("torchmetrics", False), ("protocol", True)]  # (base, torch ops on CPU)


def _worker(rank: int, port: int, path: str, out: str) -> None:
    import calibkit.torch.tables as mm
    from calibkit.torch.metric import CalibrationError, CalibrationErrorCore
    from calibkit.torch.protocol import MetricProtocol

    class Plain(CalibrationErrorCore, MetricProtocol):
        pass

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    with np.load(path) as f:
        y, p = f["labels"][:1200], f["probs"][:1200].astype(np.float32)
    results = {}
    for base, ops in CASES:
        mm.TORCH_OPS_ON_CPU = ops
        cls = CalibrationError if base == "torchmetrics" else Plain
        halves = cls(METRICS, num_bins=(10, 15), num_classes=100)
        lopsided = cls(METRICS, num_bins=(10, 15), num_classes=100)
        mine = slice(0, 500) if rank == 0 else slice(500, 1200)
        halves.update(torch.from_numpy(p[mine]), torch.from_numpy(y[mine]))
        if rank == 0:  # the other rank sees no batch
            lopsided.update(torch.from_numpy(p), torch.from_numpy(y))
        results[f"{base}-halves"] = halves.values()
        results[f"{base}-lopsided"] = lopsided.values()
        results[f"{base}-local"] = halves._values()  # the state after sync is restored
    np.savez(f"{out}/{rank}.npz", **results)
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_gloo_processes_give_the_one_process_value(tmp_path):
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("this PyTorch build has no gloo backend")
    mp = requires("torch.multiprocessing")
    path = shared_data_path("netcal__densenet-bc-100-cifar-100.npz")
    mp.spawn(_worker, args=(_free_port(), str(path), str(tmp_path)), nprocs=2, join=True)
    with np.load(path) as f:
        y, p = f["labels"][:1200], f["probs"][:1200].astype(np.float32)
    want = calibkit.evaluate(y, p, METRICS, (10, 15)).values
    local = [calibkit.evaluate(y[s], p[s], METRICS, (10, 15)).values
             for s in (slice(0, 500), slice(500, 1200))]
    for rank in (0, 1):
        with np.load(tmp_path / f"{rank}.npz") as got:
            for base, _ in CASES:
                np.testing.assert_allclose(got[f"{base}-halves"], want, rtol=0, atol=1e-12)
                np.testing.assert_allclose(got[f"{base}-lopsided"], want, rtol=0, atol=1e-12)
                np.testing.assert_allclose(got[f"{base}-local"], local[rank], rtol=0, atol=1e-12)
