"""Exports a small LLaMA-style decoder for the e2e tests: a head layout other than the GPT's.

    python3 export_llama_decoder.py --out DIR [--static-batch N]

Graph inputs: idx, targets (int64 [2,16]). Outputs: loss (scalar, first), logits [2,16,96].
Written the way LLaMA-family code is, not like export_tiny_gpt.py, so that the tensor-parallel
rules meet other idioms: separate q/k/v projections without biases, heads split with reshape +
permute, RMSNorm written out (pow, mean, rsqrt), a SwiGLU MLP (two column-parallel
projections multiplied together before the row-parallel one), and the causal mask an additive
float buffer (0 / -inf) that the export stores as an ordinary initializer.
"""

import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_tiny_gpt as gpt  # noqa: E402
import export_util  # noqa: E402

# The GPTs' inputs (train_reference reads these); the model itself is its own.
VOCAB, SEQ, BATCH = gpt.VOCAB, gpt.SEQ, gpt.BATCH
D_MODEL = 32
N_LAYER = 2
N_HEAD = 4
HIDDEN = 64


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        # Distinct weights, not ones: a mix-up of parameters shows in the numbers.
        self.weight = nn.Parameter(torch.empty(dim).uniform_(0.5, 1.5))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(nn.Module):
    def __init__(self, p_drop=0.0):
        super().__init__()
        self.attn_drop = gpt.dropout(p_drop)
        self.head_dim = D_MODEL // N_HEAD
        self.q_proj = nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.k_proj = nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.v_proj = nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.o_proj = nn.Linear(D_MODEL, D_MODEL, bias=False)
        mask = torch.full((SEQ, SEQ), float("-inf")).triu(1)
        self.register_buffer("causal_mask", mask)

    def forward(self, x):
        bsz, seqlen, _ = x.shape
        q = self.q_proj(x).reshape(bsz, seqlen, N_HEAD, self.head_dim).permute(0, 2, 1, 3)
        k = self.k_proj(x).reshape(bsz, seqlen, N_HEAD, self.head_dim).permute(0, 2, 1, 3)
        v = self.v_proj(x).reshape(bsz, seqlen, N_HEAD, self.head_dim).permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.transpose(2, 3)) / (self.head_dim ** 0.5)
        scores = scores + self.causal_mask[:seqlen, :seqlen]
        out = torch.matmul(self.attn_drop(F.softmax(scores.float(), dim=-1)), v)
        out = out.permute(0, 2, 1, 3).reshape(bsz, seqlen, D_MODEL)
        return self.o_proj(out)


class FeedForward(nn.Module):
    def __init__(self, p_drop=0.0):
        super().__init__()
        self.drop = gpt.dropout(p_drop)
        self.gate_proj = nn.Linear(D_MODEL, HIDDEN, bias=False)
        self.up_proj = nn.Linear(D_MODEL, HIDDEN, bias=False)
        self.down_proj = nn.Linear(HIDDEN, D_MODEL, bias=False)

    def forward(self, x):
        return self.down_proj(self.drop(F.silu(self.gate_proj(x)) * self.up_proj(x)))


class DecoderLayer(nn.Module):
    def __init__(self, p_drop=0.0):
        super().__init__()
        self.input_layernorm = RMSNorm(D_MODEL)
        self.self_attn = Attention(p_drop)
        self.post_attention_layernorm = RMSNorm(D_MODEL)
        self.mlp = FeedForward(p_drop)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaDecoder(nn.Module):
    def __init__(self, p_drop=0.0):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, D_MODEL)
        self.layers = nn.ModuleList([DecoderLayer(p_drop) for _ in range(N_LAYER)])
        self.norm = RMSNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, idx, targets):
        x = self.embed_tokens(idx)
        for layer in self.layers:
            x = layer(x)
        logits = self.lm_head(self.norm(x))
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        return loss, logits


def main():
    args = export_util.parse_args(__doc__.splitlines()[0])
    gpt.export_gpt(LlamaDecoder, args)


if __name__ == "__main__":
    main()
