"""The torch primitives calibkit.torch could build its tables from, timed on the device.

Design measurements behind ``calibkit/torch/tables.py`` (docs/performance.md, "calibkit.torch
on a GPU"): for the 10M top-label pairs, ways to sum 4 whole-number columns into 16 cells; for
the (50k, 1000) float32 matrix, ways to sort the scores within each class. Every variant's
result is checked against the first one's (the sums bit for bit, the sorts by values).

    python benches/gpu_primitives.py            # on the GPU (a CPU fallback with small sizes)
"""

from __future__ import annotations

import torch
from gpu_calibration import timed


def main() -> None:
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    gpu = dev.type == "cuda"
    n_pairs, n, k = (10_000_000, 50_000, 1000) if gpu else (200_000, 2000, 100)
    g = torch.Generator(device=dev).manual_seed(0)
    print(f"device: {torch.cuda.get_device_name(dev) if gpu else 'cpu'}; torch {torch.__version__}")
    # -- sums of 4 whole-number columns of n_pairs rows into 16 cells ------------------------
    cells = 16
    cell = torch.randint(0, cells, (n_pairs,), device=dev, generator=g)
    cols = [torch.ones(n_pairs, dtype=torch.float64, device=dev),
            torch.randint(0, 2 ** 25, (n_pairs,), device=dev, generator=g).double(),
            torch.randint(0, 2 ** 25, (n_pairs,), device=dev, generator=g).double(),
            torch.randint(0, 2, (n_pairs,), device=dev, generator=g).double()]

    def index_add(r):
        def run():
            c = cell * r + (torch.arange(n_pairs, device=dev) & (r - 1)) if r > 1 else cell
            out = torch.zeros((4, cells * r), dtype=torch.float64, device=dev)
            for row, col in zip(out, cols):
                row.index_add_(0, c, col)
            return out.view(4, cells, r).sum(2)
        return run

    def bincount(r):
        def run():
            c = cell * r + (torch.arange(n_pairs, device=dev) & (r - 1)) if r > 1 else cell
            return torch.stack([torch.bincount(c, weights=col, minlength=cells * r)
                                for col in cols]).view(4, cells, r).sum(2)
        return run

    def onehot(chunk):
        def run():
            out = torch.zeros((cells, 4), dtype=torch.float64, device=dev)
            ar = torch.arange(cells, device=dev)
            m = torch.stack(cols, 1)
            for i in range(0, n_pairs, chunk):
                oh = (cell[i:i + chunk, None] == ar).to(torch.float64)
                out += oh.t() @ m[i:i + chunk]
            return out.t()
        return run

    def sort_cumsum():
        cs, order = torch.sort(cell)
        bnd = torch.searchsorted(cs, torch.arange(cells + 1, device=dev))
        outs = []
        for col in cols:
            p = torch.zeros(n_pairs + 1, dtype=torch.int64, device=dev)
            torch.cumsum(col[order].to(torch.int64), 0, out=p[1:])
            outs.append((p[bnd[1:]] - p[bnd[:-1]]).double())
        return torch.stack(outs)

    def scatter_add():
        out = torch.zeros((4, cells), dtype=torch.float64, device=dev)
        for row, col in zip(out, cols):
            row.scatter_add_(0, cell, col)
        return out

    ref = index_add(1)()
    print(f"\n{n_pairs} rows, 4 whole-number float64 columns into {cells} cells:")
    for name, f in [("index_add_, 1 copy per cell", index_add(1)),
                    ("index_add_, 64 copies", index_add(64)),
                    ("index_add_, 256 copies", index_add(256)),
                    ("scatter_add_", scatter_add),
                    ("bincount(weights), 1 copy", bincount(1)),
                    ("bincount(weights), 64 copies", bincount(64)),
                    ("one-hot matmul, chunks of 1M", onehot(1_000_000)),
                    ("one-hot matmul, chunks of 4M", onehot(4_000_000)),
                    ("sort by cell + int64 prefix sums", sort_cumsum)]:
        same = bool(torch.equal(f(), ref))
        print(f"| {name} | {timed(f, 5, dev):.3f} ms | equal: {same} |")
    ones = torch.ones((), dtype=torch.float64, device=dev).expand(n_pairs)
    print(f"| bincount(cell), no weights | "
          f"{timed(lambda: torch.bincount(cell, minlength=cells), 5, dev):.3f} ms | |")
    def count_spread():
        c = cell * 64 + (torch.arange(n_pairs, device=dev) & 63)
        return torch.zeros(cells * 64, dtype=torch.float64, device=dev).index_add_(0, c, ones)
    print(f"| index_add_ of an expanded 1.0, 64 copies | {timed(count_spread, 5, dev):.3f} ms | |")
    conf = torch.rand(n_pairs, device=dev, generator=g)
    print(f"| unit halves of {n_pairs} float32 scores | "
          f"{timed(lambda: torch.round(conf.double() * 2.0 ** 50).to(torch.int64), 5, dev):.3f} ms | |")

    # -- sorting the (n, k) float32 matrix's scores within each class ------------------------
    p = torch.softmax(3 * torch.randn(n, k, device=dev, generator=g), dim=1)
    print(f"\n({n}, {k}) float32 softmax: sorting within each class (column):")

    def seg_sort():
        return torch.sort(p.t().contiguous(), dim=1)[0].reshape(-1)

    def key_sort():
        bits = p.t().contiguous().view(torch.int32).to(torch.int64)  # scores >= 0: bits ordered
        key = (torch.arange(k, device=dev)[:, None] << 32) | bits
        return torch.sort(key.reshape(-1))[0]

    def flat_sort():
        return torch.sort(p.reshape(-1))[0]

    def kept_sort(t=0.01):
        pt = p.t().contiguous()
        keep = pt > t
        bits = pt.view(torch.int32).to(torch.int64)
        key = ((torch.arange(k, device=dev)[:, None] << 32) | bits)[keep]
        return torch.sort(key)[0]

    a, b = seg_sort(), key_sort()
    same = bool(torch.equal(a, (b & 0xFFFFFFFF).to(torch.int32).view(torch.float32)))
    for name, f in [("torch.sort of the (K, N) transpose along dim 1", seg_sort),
                    ("torch.sort of int64 keys (class << 32) + score bits (1-D)", key_sort),
                    ("torch.sort of the flat matrix (1-D float32, one group)", flat_sort),
                    ("keys of the scores > 0.01 only, then torch.sort", kept_sort)]:
        print(f"| {name} | {timed(f, 5, dev):.3f} ms | |")
    print(f"keys' order equals the segmented sort's: {same}; scores > 0.01: "
          f"{int((p > 0.01).sum())} of {n * k}")
    x = torch.randint(0, 2 ** 25, (n * k,), device=dev, generator=g)
    print(f"| int64 cumsum of {n * k} | {timed(lambda: torch.cumsum(x, 0), 5, dev):.3f} ms | |")
    print(f"| transpose copy of the matrix | {timed(lambda: p.t().contiguous(), 5, dev):.3f} ms | |")


if __name__ == "__main__":
    main()
