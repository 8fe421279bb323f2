"""The H200's every-sample float32 OpInfo table of session 9, from its four runs:
    python3 docs/bench/h200-2026-12-02-s9/merge.py > docs/bench/h200-2026-12-02-s9/opinfo-cuda-float32-every.md

Run 1 (every entry) kept only its per-entry log lines (``opinfo-cuda-float32-every-run1.log``:
verdict, seconds, reason; its JSON-lines file was lost when the run overran its call);
the reruns (``opinfo-cuda-float32-rerun*.jsonl``, every sample's verdict) re-ran its 12
failures after their fixes, and the entries it had not finished. A later run's verdict
replaces an earlier one's."""

import json
import re
from collections import Counter
from pathlib import Path

here = Path(__file__).parent
verdicts: dict[str, tuple[str, str, str]] = {}  # name -> (verdict, reason, source)
for line in (here / "opinfo-cuda-float32-every-run1.log").read_text().splitlines():
    m = re.match(r"^(pass|refused|failed)\s+(\S+)\s+[\d.]+s\s?(.*)$", line)
    if m:
        verdicts[m.group(2)] = (m.group(1), m.group(3).strip(), "run 1")
for k in ("", "2", "3"):
    for line in (here / f"opinfo-cuda-float32-rerun{k}.jsonl").read_text().splitlines():
        d = json.loads(line)
        kinds = Counter(s["verdict"] for s in d["samples"])
        first = next((s.get("reason", "") for s in d["samples"] if s["verdict"] != "pass"), "")
        samples = ", ".join(f"{n} {v}" for v, n in sorted(kinds.items()))
        verdicts[d["name"]] = (d["verdict"], f"{first[:150]} ({samples})", f"rerun {k or 1}")
not_finished = ["max_pool2d_with_indices_backward", "nn.functional.max_pool2d"]
counts = Counter(v for v, _, _ in verdicts.values())
print("# OpInfo conformance: float32, deplodock.compile on CUDA (NVIDIA H200), every sample,")
print("torch 2.11.0+cu130 (session 9; made by merge.py from the runs beside it)\n")
print("| verdict | entries |\n| --- | --- |")
for v in ("pass", "refused", "failed"):
    print(f"| {v} | {counts[v]} |")
print(f"| not finished in 265 s (refused on the interpreters) | {len(not_finished)} |")
print(f"| all | {len(verdicts) + len(not_finished)} |\n")
print("| entry | verdict | last run | reason |\n| --- | --- | --- | --- |")
for name in sorted(verdicts):
    v, reason, source = verdicts[name]
    print(f"| `{name}` | {v} | {source} | {reason.replace('|', '/')} |")
for name in not_finished:
    print(f"| `{name}` | not finished | rerun 3 | every sample refused at capture on the interpreters |")
