"""Exports a tiny sequence-first transformer LM built from PyTorch's own layers for the e2e tests.

    python3 export_seq_first_transformer.py --out DIR [--static-batch N]

Graph inputs: src, targets (int64 [12,4]: [seq, batch]). Outputs: loss (scalar, first), logits
[12,4,64]. The model is PyTorch's word-language-model example in miniature: token embedding
scaled by sqrt(d_model), a sinusoidal positional-encoding buffer sliced to the sequence length,
nn.TransformerEncoder of nn.TransformerEncoderLayer with the default batch_first=False (post-LN,
ReLU, dropout 0.0, which still exports Dropout nodes of ratio 0), a causal mask built in
forward from the sequence length (-> ConstantOfShape + Trilu) and a linear decoder; the loss is
cross-entropy over the flattened [seq * batch, vocab] logits.

Unlike the other test models the batch is dim 1 of every input, and nn.MultiheadAttention folds
it into batch * heads (Reshape to [seq, batch * heads, head_dim], then bmm over batch * heads):
a compiler that takes dim 0 for the batch splits the sequence instead. BATCH_DIM records this
for the tests. Seq and batch are exported as dynamic axes and then pinned to 12x4 like the tiny
GPT's; --static-batch N exports without dynamic_axes from N batch columns.

Training data in shardrun's layout (batches cut along dim 0) is a stack of [SEQ, batch] blocks:
shape [steps * SEQ, batch] per input (tests/e2e/test_batch_dimension.py writes such data).

The positional encoding `pos.pe` is a registered buffer, which PyTorch never trains; in the
ONNX graph it is a float initializer like the parameters, and shardc trains every float
initializer that gets a gradient. To follow PyTorch's training, compile with
`--freeze 'pos\\.pe'` (with it, 30 AdamW steps agree with PyTorch within 2e-7 relative).
"""

import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_util  # noqa: E402

VOCAB = 64
MAX_LEN = 32
D_MODEL = 32
N_HEAD = 2
D_FF = 64
N_LAYER = 2
BATCH = 4
SEQ = 12  # != BATCH and != the data-parallel tests' global batch of 8
BATCH_DIM = 1  # inputs are [seq, batch]


class PositionalEncoding(nn.Module):
    """Sinusoidal positions as a [MAX_LEN, 1, D_MODEL] buffer, as in PyTorch's examples."""

    def __init__(self):
        super().__init__()
        position = torch.arange(MAX_LEN, dtype=torch.float32).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, D_MODEL, 2).float() * (-math.log(10000.0) / D_MODEL))
        pe = torch.zeros(MAX_LEN, 1, D_MODEL)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[:x.size(0)]  # traced: Slice whose end comes from Shape


class SeqFirstTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.pos = PositionalEncoding()
        layer = nn.TransformerEncoderLayer(D_MODEL, N_HEAD, dim_feedforward=D_FF, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, N_LAYER, enable_nested_tensor=False)
        self.decoder = nn.Linear(D_MODEL, VOCAB)

    def forward(self, src, targets):
        s = src.size(0)
        # nn.Transformer.generate_square_subsequent_mask: -inf above the diagonal.
        mask = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        x = self.pos(self.embed(src) * math.sqrt(D_MODEL))
        logits = self.decoder(self.encoder(x, mask))
        loss = F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))
        return loss, logits


def main():
    args = export_util.parse_args(__doc__.splitlines()[0])
    model = export_util.seeded_model(SeqFirstTransformer)
    cols = export_util.sample_rows(args, BATCH)
    export_util.export_language_model(model, args, ["src", "targets"], (SEQ, cols), VOCAB,
                                      {0: "seq", 1: "batch"})


if __name__ == "__main__":
    main()
