"""OpInfo conformance run as CI does it (one float32 sample, loop and kernel levels, one process), timed. Session 27, idle 2-core machine: 111 s before, 61 s after; 454 pass, 248 refused."""
import json, time, torch
from deplodock.bench import opinfo
t=time.time()
rs = opinfo.run(opinfo.entries(), torch.float32, samples=1, timeout=60, jobs=1)
print("total", time.time()-t)
json.dump([dict(name=r.name, verdict=r.verdict, s=getattr(r,'seconds',None)) for r in rs], open('/tmp/opi.json','w'))
