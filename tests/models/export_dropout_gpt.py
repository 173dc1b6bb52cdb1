"""Exports the tiny GPT with dropout 0.1 (embeddings, attention probabilities, both residual
branches), as nanoGPT places it, for the training-mode dropout tests.

    python3 export_dropout_gpt.py --out DIR

Same inputs and outputs as export_tiny_gpt.py. The export is in training mode, so the graph has
7 Dropout nodes with ratio 0.1 and training_mode = true, in execution order: embeddings, then
per block attention probabilities, attention output, MLP output. Its forward outputs depend on
PyTorch's random masks, so the model is only used for training (train_reference.py replaces the
masks by shardc's, see philox_dropout.py).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_tiny_gpt as gpt  # noqa: E402
import export_util  # noqa: E402

BATCH, SEQ, VOCAB = gpt.BATCH, gpt.SEQ, gpt.VOCAB  # train_reference reads these
P_DROP = 0.1


class DropoutGPT(gpt.TinyGPT):
    def __init__(self):
        super().__init__(p_drop=P_DROP)


def main():
    args = export_util.parse_args(__doc__.splitlines()[0])
    gpt.export_gpt(DropoutGPT, args)


if __name__ == "__main__":
    main()
