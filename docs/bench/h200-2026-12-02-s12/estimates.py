import gc, sys, warnings
warnings.filterwarnings("ignore")
from deplodock.bench.cases import all_cases
from deplodock.frontends.export import import_program
from deplodock.pipeline import lower
from deplodock.dialects import kernel
from deplodock.passes.tile.schedule.estimate import kernel_estimate, beyond_guard
for case in [c for c in all_cases() if c.group != "model"]:
    module = import_program(case.build().program).module
    lower(module, to="kernel")
    for k in module.walk():
        if isinstance(k, kernel.KernelOp):
            e = kernel_estimate(k)
            flag = "BEYOND" if beyond_guard(e) else ""
            print(f"{case.name:40s} {k.sym_name.data:28s} est {e.seconds*1e6:10.1f} roof {e.roofline*1e6:10.1f} x{e.ratio:6.1f} {e.bound:8s} {flag}", flush=True)
    del module; gc.collect()
