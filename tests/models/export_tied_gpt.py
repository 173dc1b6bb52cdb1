"""Exports the tiny GPT with tied input/output embeddings (lm_head.weight is wte.weight).

    python3 export_tied_gpt.py --out DIR

Same model, inputs and outputs as export_tiny_gpt.py, except that the output projection reuses
the token embedding matrix, as GPT-2 does: the ONNX graph has one initializer used by the
embedding Gather and by the projection, so its gradient is the sum of both uses.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_tiny_gpt as gpt  # noqa: E402
import export_util  # noqa: E402

BATCH, SEQ, VOCAB = gpt.BATCH, gpt.SEQ, gpt.VOCAB


class TiedGPT(gpt.TinyGPT):
    def __init__(self):
        super().__init__()
        self.lm_head.weight = self.wte.weight


def main():
    args = export_util.parse_args(__doc__.splitlines()[0])
    torch.manual_seed(0)
    model = TiedGPT()
    export_util.randomize_layer_norms(model)
    idx = torch.randint(0, VOCAB, (BATCH, SEQ), dtype=torch.long)
    targets = torch.randint(0, VOCAB, (BATCH, SEQ), dtype=torch.long)
    bt = {0: "batch", 1: "seq"}
    export_util.export_model(model, (idx, targets), ["idx", "targets"], ["loss", "logits"],
                             args.out, dynamic_axes={"idx": bt, "targets": bt, "logits": bt})


if __name__ == "__main__":
    main()
