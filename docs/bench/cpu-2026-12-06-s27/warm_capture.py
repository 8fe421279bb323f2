"""Warm capture of a five-op program that decomposes (hardswish, logcumsumexp, addcmul beside kept linear and rms_norm): the first call pays imports, the rest are warm. Session 27: 0.24 s before, 0.07 s after."""
import time, torch, warnings
warnings.filterwarnings("ignore")
from deplodock.frontends import capture as E
class M(torch.nn.Module):
    def forward(self, x): return torch.nn.functional.hardswish(x).logcumsumexp(0) + torch.nn.functional.linear(x, x) + torch.addcmul(x, x, x)+torch.nn.functional.rms_norm(x, [8])
x = torch.randn(8, 8)
for i in range(4):
    t = time.perf_counter(); ep = E.export_module(M(), (x,), "m"); print(time.perf_counter() - t)
print(ep.graph)
