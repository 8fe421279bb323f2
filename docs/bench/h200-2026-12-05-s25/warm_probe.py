"""Why the backend's warm graph failed on torch 2.11 (session 24's H200 call:
test_a_warm_graph_from_the_program_cache_matches_eager, "Cannot copy out of meta tensor"):
the test's steps with what each attempt's program holds printed."""

import os
import tempfile

import torch

os.environ["DEPLODOCK_CACHE_DIR"] = tempfile.mkdtemp()
from deplodock.torch_backend import deplodock_backend  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 32)
        self.norm = torch.nn.RMSNorm(32)

    def forward(self, x):
        y = self.norm(self.linear(x)) * torch.tensor(2.0)
        return y, y.sum(-1)


def describe(name, t):
    from torch._subclasses.fake_tensor import FakeTensor

    return f"{name}: {type(t).__name__} device={t.device} meta={t.is_meta} fake={isinstance(t, FakeTensor)}"


print("torch", torch.__version__)
torch.manual_seed(0)
model = Block().cuda()
x = torch.randn(4, 16, device="cuda")
for attempt in ("cold", "warm"):
    torch._dynamo.reset()
    seen = []

    def spy(gm, example_inputs):
        print(f"[{attempt}] dynamo graph:\n{gm.code}")
        run = deplodock_backend(gm, example_inputs)
        seen.append(run)
        comp = getattr(run, "deplodock", None)
        if comp is None:
            print(f"[{attempt}] fell back")
        else:
            print(f"[{attempt}] exported is None: {comp.exported is None}")
            for k, v in comp.constants.items():
                print(f"[{attempt}]   constant {describe(k, v)}")
            if comp.exported is not None:
                for k, v in comp.exported.constants.items():
                    print(f"[{attempt}]   program constant {describe(k, v)}")
        return run

    try:
        with torch.no_grad():
            out = torch.compile(model, backend=spy)(x)
            want = model(x)
        torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
        print(f"[{attempt}] matches eager")
    except Exception as e:  # noqa: BLE001
        print(f"[{attempt}] FAILED: {type(e).__name__}: {e}")
