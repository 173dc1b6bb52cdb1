"""Exports the tiny GPT with tied input/output embeddings (lm_head.weight is wte.weight).

    python3 export_tied_gpt.py --out DIR

Same model, inputs and outputs as export_tiny_gpt.py, except that the output projection reuses
the token embedding matrix, as GPT-2 does: the ONNX graph has one initializer used by the
embedding Gather and by the projection, so its gradient is the sum of both uses.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_tiny_gpt as gpt  # noqa: E402
import export_util  # noqa: E402

BATCH, SEQ, VOCAB = gpt.BATCH, gpt.SEQ, gpt.VOCAB  # train_reference reads these


class TiedGPT(gpt.TinyGPT):
    def __init__(self):
        super().__init__()
        self.lm_head.weight = self.wte.weight


def main():
    args = export_util.parse_args(__doc__.splitlines()[0])
    gpt.export_gpt(TiedGPT, args)


if __name__ == "__main__":
    main()
