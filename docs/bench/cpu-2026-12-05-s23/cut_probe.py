"""Can dynamo's graph of a decoder stack be lowered as four layers and restacked? (issue 21:
the torch.compile backend is the one entry point that still lowers every layer.)

torch.compile hands the backend one flat graph; torch.export of it keeps each node's
``nn_module_stack`` (``L['self'].lm.model.layers.N``) but names every input ``args_<i>``
(parameters are user inputs, in layer order). This probe exports dynamo's graph of a
tiny Llama with 6 and with 4 layers and cuts the 6-layer program to 4: drop interior
layers 3..N-2 (their nodes, and the inputs only they read), number the kept inputs
``args_0..`` again, and move the names of the last layer and the epilogue, and their
reads of the dropped previous layer, back N-4 layers by torch.fx's naming arithmetic
(``b_n`` -> ``b_{n - (N-4) k}``, ``k`` how often a layer makes ``b``). Session 23: the cut
equals the 4-layer export node for node (op, name, target, arguments, value): True.

    python docs/bench/cpu-2026-12-05-s23/cut_probe.py
"""

import collections
import re

import torch

from deplodock.api import capture
from deplodock.frontends.capture import _spelled, _spelled_value, program_fingerprint
from deplodock.frontends.models import CausalLMLogits, build_model

LAYER = re.compile(r"layers\.(\d+)")
NUMBERED = re.compile(r"^(.*?)(?:_(\d+))?$")


def dynamo_program(layers: int):
    """torch.export of the graph dynamo hands a backend for a tiny Llama of ``layers``."""
    torch.manual_seed(0)
    model = CausalLMLogits(build_model("tinyllama", layers=layers)).eval()
    ids = torch.randint(0, 32000, (1, 16))
    out = {}

    def backend(gm, example_inputs):
        out["program"] = capture(gm, *example_inputs)[1]
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model, backend=backend)(ids)
    return out["program"]


def layer_of(node) -> int | None:
    stack = node.meta.get("nn_module_stack") or {}
    found = [int(m.group(1)) for _, (path, _) in stack.items() for m in [LAYER.search(path)] if m]
    return found[-1] if found else None


def input_layer(node) -> int | None:
    """An input's layer: its users' (all in one layer, else None)."""
    layers = {layer_of(user) for user in node.users}
    return layers.pop() if len(layers) == 1 else None


def main() -> None:
    four, six = dynamo_program(4), dynamo_program(6)
    nodes = list(six.graph.nodes)
    per_layer = collections.Counter(
        NUMBERED.match(x.name).group(1) for x in nodes if x.op != "placeholder" and layer_of(x) == 1
    )
    shift = 6 - 4

    def moved(name: str) -> str:
        base, number = NUMBERED.match(name).group(1), int(NUMBERED.match(name).group(2) or 0)
        if base not in per_layer:
            return name
        number -= shift * per_layer[base]
        return base if number == 0 else f"{base}_{number}"

    dropped = {3, 4}
    last = next(i for i, x in enumerate(nodes) if x.op != "placeholder" and layer_of(x) == 5)

    def drop(x) -> bool:
        return (input_layer(x) if x.op == "placeholder" else layer_of(x)) in dropped

    rename, count = {}, 0
    for i, x in enumerate(nodes):
        if x.op == "placeholder":
            if not drop(x):
                rename[x.name], count = f"args_{count}", count + 1
        elif i >= last or layer_of(x) in dropped:
            rename[x.name] = moved(x.name)
        else:
            rename[x.name] = x.name

    def spelled(value):
        def fix(o):
            if isinstance(o, list):
                if len(o) == 2 and o[0] == "node" and isinstance(o[1], str):
                    return ["node", rename.get(o[1], o[1])]
                return [fix(e) for e in o]
            return o

        return fix(_spelled(value))

    cut = [
        [
            x.op,
            rename[x.name],
            rename[x.name] if x.op == "placeholder" else _spelled(x.target),
            spelled(x.args),
            spelled(x.kwargs),
            _spelled_value(x.meta.get("val")),
        ]
        for x in nodes
        if not drop(x)
    ]
    want = program_fingerprint(four)[2]
    print("the cut equals the 4-layer export node for node:", cut == want)


if __name__ == "__main__":
    main()
