"""Compare to_core_aten (restricted override) with torch's own run_decompositions on OpInfo samples."""
import sys, time, warnings, torch
warnings.filterwarnings("ignore")
import logging; logging.disable(logging.WARNING)
from deplodock.bench import opinfo
import deplodock.frontends.capture as ex
keep = ex.lowered_targets()
nsamp = int(sys.argv[1]) if len(sys.argv) > 1 else 1
same = diff = skipped = decomposed = 0
t0 = time.time()
for op in opinfo.entries():
    try:
        torch.manual_seed(0)
        samples = []
        for s in op.sample_inputs("cpu", torch.float32, requires_grad=False):
            samples.append(s)
            if len(samples) == nsamp: break
    except Exception:
        continue
    for sample in samples:
        try:
            program, tensors = opinfo._program(op, sample)
            with torch.no_grad():
                ep = torch.export.export(program, tuple(tensors), strict=False)
        except Exception:
            skipped += 1; continue
        try:
            with torch.no_grad():
                mine = ex.to_core_aten(ep, keep)
            a = mine.graph_module.code; mine_err = None
        except Exception as e:
            a = None; mine_err = type(e).__name__
        if mine is ep and mine_err is None:
            continue
        decomposed += 1
        try:
            table = torch.export.default_decompositions()
            for o in [o for o in table if ex.target_name(o) in keep]:
                del table[o]
            with torch.no_grad():
                b = ep.run_decompositions(table).graph_module.code; theirs_err = None
        except Exception as e:
            b = None; theirs_err = type(e).__name__
        if a == b and mine_err == theirs_err:
            same += 1
        else:
            diff += 1
            print("DIFF", opinfo.full_name(op), mine_err, theirs_err, flush=True)
print(f"same {same} diff {diff} skipped {skipped} decomposed {decomposed} in {time.time()-t0:.0f}s", flush=True)
