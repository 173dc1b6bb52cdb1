"""Exports a tiny GPT (decoder-only transformer with a cross-entropy loss) for the e2e tests.

    python3 export_tiny_gpt.py --out DIR

Graph inputs: idx, targets (int64 [2,16]). Outputs: loss (scalar, first), logits [2,16,96].
The structure follows the usual minimal GPT on purpose, so that the export contains the op
patterns real checkpoints produce: sizes read with x.size() become Shape -> Gather -> Unsqueeze ->
Concat -> Reshape, the causal mask is a registered buffer sliced to T and applied with
masked_fill (-> Equal + Where), positions come from arange (-> Range), GELU is the erf form.
Batch and sequence are exported as dynamic axes (so these subgraphs survive the export) and then
pinned to 2x16: the model has static shapes and needs no --input-shape.
"""

import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_util  # noqa: E402

VOCAB = 96
BLOCK = 16
D_MODEL = 32
N_LAYER = 2
N_HEAD = 2
BATCH = 2
SEQ = 16


def dropout(p):
    """nn.Dropout(p), or nothing at all for p = 0 (so the plain GPT exports no Dropout nodes)."""
    return nn.Dropout(p) if p else nn.Identity()


class CausalSelfAttention(nn.Module):
    def __init__(self, p_drop=0.0):
        super().__init__()
        self.n_head = N_HEAD
        self.n_embd = D_MODEL
        self.c_attn = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.c_proj = nn.Linear(D_MODEL, D_MODEL)
        self.register_buffer(
            "mask", torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))
        self.attn_drop = dropout(p_drop)
        self.resid_drop = dropout(p_drop)

    def forward(self, x):
        B, T, C = x.size()  # traced: these become Shape/Gather ops in the export
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.n_embd // self.n_head))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_drop(F.softmax(att, dim=-1))
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, p_drop=0.0):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D_MODEL)
        self.attn = CausalSelfAttention(p_drop)
        self.ln_2 = nn.LayerNorm(D_MODEL)
        self.mlp = nn.Sequential(
            nn.Linear(D_MODEL, 4 * D_MODEL),
            nn.GELU(),  # exact (erf) GELU
            nn.Linear(4 * D_MODEL, D_MODEL),
            dropout(p_drop),
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class TinyGPT(nn.Module):
    def __init__(self, p_drop=0.0, n_layer=None):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D_MODEL)
        self.wpe = nn.Embedding(BLOCK, D_MODEL)
        self.drop = dropout(p_drop)
        # N_LAYER read at construction: tools/bench/compile_scale.py sets it.
        self.blocks = nn.ModuleList([Block(p_drop) for _ in range(n_layer or N_LAYER)])
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, idx, targets):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return loss, logits


def export_gpt(model_class, args):
    """Builds `model_class` (TinyGPT or a variant) with seed 0 and exports it into args.out
    (--static-batch: without dynamic_axes, from that many rows)."""
    model = export_util.seeded_model(model_class)
    rows = export_util.sample_rows(args, BATCH)
    export_util.export_language_model(model, args, ["idx", "targets"], (rows, SEQ), VOCAB,
                                      {0: "batch", 1: "seq"})


def main():
    args = export_util.parse_args(__doc__.splitlines()[0])
    export_gpt(TinyGPT, args)


if __name__ == "__main__":
    main()
