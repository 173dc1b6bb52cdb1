"""Exports the LLaMA-style decoder with training dropout 0.1 where tensor parallelism splits the
tensors: on the attention probabilities (split by heads) and on the SwiGLU hidden features
(split by the column-parallel projections), so each device's dropout draws its block of the
whole tensor's mask.

    python3 export_dropout_llama.py --out DIR [--static-batch N]

Same inputs and outputs as export_llama_decoder.py; 4 Dropout nodes with ratio 0.1 and
training_mode = true, in execution order per layer: attention probabilities, MLP hidden. Its
forward outputs depend on PyTorch's random masks, so the model is only used for training.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_llama_decoder as llama  # noqa: E402
import export_tiny_gpt as gpt  # noqa: E402
import export_util  # noqa: E402

VOCAB, SEQ, BATCH = llama.VOCAB, llama.SEQ, llama.BATCH  # train_reference reads these
P_DROP = 0.1


class DropoutLlama(llama.LlamaDecoder):
    def __init__(self):
        super().__init__(p_drop=P_DROP)


def main():
    args = export_util.parse_args(__doc__.splitlines()[0])
    gpt.export_gpt(DropoutLlama, args)


if __name__ == "__main__":
    main()
