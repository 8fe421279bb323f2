"""``fold-integers`` on a real decoder layer: Hugging Face's attention mask reaches the
loop level as i64 index arithmetic (Python's wrap of negative indices, a batch offset of
zero, ``true and ...``); the pass folds it (the program must change: no flag is and-ed with
a constant, fewer i64 selects and casts) and the loop interpreter gives what it gave before
and what transformers computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from deplodock.dialects import make_context
from deplodock.dialects.interpreters.run import run_forward
from deplodock.frontends.export import import_program
from deplodock.passes.loop.fold_integers import FoldIntegers
from deplodock.pipeline import lower

transformers = pytest.importorskip("transformers")


def _counts(module) -> tuple[int, int, int]:
    """(andi with a constant operand, selects of i64, index_casts) in ``module``."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IntegerType

    ops = list(module.walk())
    constant_flags = sum(
        isinstance(o, arith.AndIOp)
        and any(isinstance(v.owner, arith.ConstantOp) for v in o.operands)
        for o in ops
    )
    selects = sum(isinstance(o, arith.SelectOp) and o.result.type == IntegerType(64) for o in ops)
    casts = sum(isinstance(o, arith.IndexCastOp) for o in ops)
    return constant_flags, selects, casts


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_fold_integers_folds_the_layer_mask_and_keeps_its_meaning(family: str) -> None:
    from deplodock.frontends.models import capture_model

    fields = dict(
        hidden_size=64,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        vocab_size=128,
        max_position_embeddings=64,
    )
    config = (transformers.LlamaConfig if family == "llama" else transformers.Qwen2Config)(**fields)
    captured = capture_model(config, seq=11, part="layer")
    imported = import_program(captured.program)
    args = [t.numpy() for t in captured.arguments(imported.func)]
    with torch.no_grad():
        want = captured.module(*captured.example_inputs).numpy()
    lower(imported.module, to="loop", until="fold-integers")
    (before,) = run_forward(imported.module, args)
    flags, selects, casts = _counts(imported.module)
    assert flags >= 1 and selects >= 2, "the layer's mask no longer reaches the loop level"

    FoldIntegers().apply(make_context(), imported.module)
    imported.module.verify()
    after_flags, after_selects, after_casts = _counts(imported.module)
    assert after_flags == 0 and after_selects < selects and after_casts < casts
    (after,) = run_forward(imported.module, args)
    np.testing.assert_array_equal(after, before)
    assert float(np.abs(after - want).max()) <= 1e-5 * float(np.abs(want).max())
