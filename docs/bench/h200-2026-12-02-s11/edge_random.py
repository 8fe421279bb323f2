"""Edge tiles against cuBLAS on random irregular shapes (real launches on the GPU).

    python3 docs/bench/h200-2026-12-02-s11/edge_random.py [N]

N random products (default 24), M, N, K drawn from 1..1500 with primes and one-past-a-
tile sizes favoured, as ``a @ b``, ``linear(x, W, b)`` (a bias) and ``bmm``; each
compiled with ``deplodock.compile`` (fp32, TF32 off) and compared with PyTorch:
max |got - want| / max |want| <= 1e-4. Prints one line a case and a summary; exits 1 on
any mismatch.
"""

import random
import sys
import warnings

import torch

warnings.filterwarnings("ignore")
torch.backends.cuda.matmul.allow_tf32 = False

SIZES = [1, 2, 3, 7, 31, 33, 63, 65, 97, 127, 129, 251, 257, 509, 513, 1021, 1031, 1499]


class Mm(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, a, b, c=None):
        if self.kind == "linear":
            return torch.nn.functional.linear(a, b, c)
        return torch.bmm(a, b) if self.kind == "bmm" else a @ b


def main(count: int) -> int:
    import deplodock

    rng = random.Random(19)
    bad = 0
    for i in range(count):
        kind = ("mm", "linear", "bmm")[i % 3]
        m, n, k = (rng.choice(SIZES) for _ in range(3))
        dev = "cuda"
        if kind == "mm":
            args = (torch.randn(m, k, device=dev), torch.randn(k, n, device=dev))
        elif kind == "linear":
            args = (torch.randn(m, k, device=dev), torch.randn(n, k, device=dev),
                    torch.randn(n, device=dev))
        else:
            b = rng.choice([1, 3, 5])
            args = (torch.randn(b, m, k, device=dev), torch.randn(b, k, n, device=dev))
        module = Mm(kind)
        try:
            got = deplodock.compile(module, *args, cache=False)(*args)
            want = module(*args)
            err = ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
            status = "ok" if err <= 1e-4 else "MISMATCH"
        except Exception as e:  # noqa: BLE001 - report and go on
            err, status = float("nan"), f"ERROR {type(e).__name__}: {e}"
        bad += status != "ok"
        print(f"{kind} m={m} n={n} k={k}: {status} (err {err:.1e})", flush=True)
    print(f"{count - bad} of {count} correct")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 24))
