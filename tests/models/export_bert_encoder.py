"""Exports a small BERT-like encoder with a classification loss for the e2e tests.

    python3 export_bert_encoder.py --out DIR

Graph inputs (batch dim symbolic, "batch"; DIR/input_shapes.txt has the sample shapes for
`shardc --input-shape`):
    input_ids, token_type_ids, attention_mask: int64 [batch, 12]   (attention_mask: 1 = token)
    labels: int64 [batch]                                          (-100 = ignored)
Outputs: loss (scalar, first), logits [batch, 3].

Token + position + segment embeddings, LayerNorm, two post-LN encoder layers with bidirectional
attention under an additive padding mask, erf GELU MLPs, a tanh pooler on the first token and a
classifier. The loss is log_softmax + nll_loss with an ignored label, which exports as
LogSoftmax + NegativeLogLikelihoodLoss(ignore_index=-100).
"""

import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_util  # noqa: E402

VOCAB = 100
MAX_POS = 32
TYPE_VOCAB = 2
D_MODEL = 32
N_HEAD = 4
D_FF = 64
N_LAYER = 2
CLASSES = 3
BATCH = 4
SEQ = 12
LN_EPS = 1e-12  # BERT's epsilon


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(VOCAB, D_MODEL)
        self.position = nn.Embedding(MAX_POS, D_MODEL)
        self.token_type = nn.Embedding(TYPE_VOCAB, D_MODEL)
        self.norm = nn.LayerNorm(D_MODEL, eps=LN_EPS)
        # Sliced to the sequence length in forward (-> Slice whose `ends` come from Shape).
        self.register_buffer("position_ids", torch.arange(MAX_POS).unsqueeze(0))

    def forward(self, input_ids, token_type_ids):
        seq_len = input_ids.size(1)
        pos = self.position_ids[:, :seq_len]
        x = self.word(input_ids) + self.position(pos) + self.token_type(token_type_ids)
        return self.norm(x)


class SelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.head_size = D_MODEL // N_HEAD
        self.query = nn.Linear(D_MODEL, D_MODEL)
        self.key = nn.Linear(D_MODEL, D_MODEL)
        self.value = nn.Linear(D_MODEL, D_MODEL)

    def split_heads(self, x):
        b, t, _ = x.size()
        return x.view(b, t, N_HEAD, self.head_size).permute(0, 2, 1, 3)

    def forward(self, x, additive_mask):
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        probs = F.softmax(scores + additive_mask, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        b, t = ctx.size(0), ctx.size(1)
        return ctx.view(b, t, D_MODEL)


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = SelfAttention()
        self.attn_out = nn.Linear(D_MODEL, D_MODEL)
        self.attn_norm = nn.LayerNorm(D_MODEL, eps=LN_EPS)
        self.intermediate = nn.Linear(D_MODEL, D_FF)
        self.output = nn.Linear(D_FF, D_MODEL)
        self.out_norm = nn.LayerNorm(D_MODEL, eps=LN_EPS)

    def forward(self, x, additive_mask):
        x = self.attn_norm(x + self.attn_out(self.attention(x, additive_mask)))  # post-LN
        h = self.output(F.gelu(self.intermediate(x)))
        return self.out_norm(x + h)


class BertClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embeddings = Embeddings()
        self.layers = nn.ModuleList([EncoderLayer() for _ in range(N_LAYER)])
        self.pooler = nn.Linear(D_MODEL, D_MODEL)
        self.classifier = nn.Linear(D_MODEL, CLASSES)

    def forward(self, input_ids, token_type_ids, attention_mask, labels):
        # [B, T] 1/0 padding mask -> additive [B, 1, 1, T]: 0 for tokens, -10000 for padding.
        mask = attention_mask[:, None, None, :].to(torch.float32)
        additive_mask = (1.0 - mask) * -10000.0
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, additive_mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        logits = self.classifier(pooled)
        # The flattening view (the usual `.view(-1, num_labels)` of classification heads) also
        # keeps torch's exporter from fusing LogSoftmax + nll_loss into SoftmaxCrossEntropyLoss.
        log_probs = F.log_softmax(logits, dim=-1).view(-1, CLASSES)
        loss = F.nll_loss(log_probs, labels.view(-1), ignore_index=-100)
        return loss, logits


def main():
    args = export_util.parse_args(__doc__.splitlines()[0])
    model = export_util.seeded_model(BertClassifier)
    rows = export_util.sample_rows(args, BATCH)
    input_ids = torch.randint(0, VOCAB, (rows, SEQ), dtype=torch.long)
    # Two segments: the first 7 tokens are segment 0, the rest segment 1.
    token_type_ids = torch.zeros(rows, SEQ, dtype=torch.long)
    token_type_ids[:, 7:] = 1
    # Rows padded to different lengths (the first one not at all).
    lengths = [[SEQ, 9, 5, 10][row % 4] for row in range(rows)]
    attention_mask = torch.zeros(rows, SEQ, dtype=torch.long)
    for row, n in enumerate(lengths):
        attention_mask[row, :n] = 1
    # One ignored label in every four.
    labels = torch.tensor([[0, 2, -100, 1][row % 4] for row in range(rows)], dtype=torch.long)

    batch = {0: "batch"}
    names = ["input_ids", "token_type_ids", "attention_mask", "labels"]
    export_util.export_model(
        model, (input_ids, token_type_ids, attention_mask, labels), names, ["loss", "logits"],
        args.out,
        dynamic_axes=export_util.export_axes(args, {**{n: batch for n in names}, "logits": batch}),
        keep_symbolic=not args.static_batch)


if __name__ == "__main__":
    main()
