"""Exports the tiny GPT with 8 blocks instead of 2, for the pipeline-parallel tests.

    python3 export_deep_gpt.py --out DIR

Same model, inputs and outputs as export_tiny_gpt.py (d=32, 2 heads, vocab 96, 2x16 tokens),
with enough repeated layers to cut into 2, 4 or 8 pipeline stages.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_tiny_gpt as gpt  # noqa: E402
import export_util  # noqa: E402

BATCH, SEQ, VOCAB = gpt.BATCH, gpt.SEQ, gpt.VOCAB  # train_reference reads these
LAYERS = 8


class DeepGPT(gpt.TinyGPT):
    def __init__(self):
        super().__init__(n_layer=LAYERS)


def main():
    args = export_util.parse_args(__doc__.splitlines()[0])
    gpt.export_gpt(DeepGPT, args)


if __name__ == "__main__":
    main()
