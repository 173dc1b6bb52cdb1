"""shardc's training-mode dropout masks in NumPy, for the PyTorch reference runs.

PyTorch's own dropout draws from its own generator, so a reference run cannot use it and still
be compared step by step. This module reproduces the masks the runtime's `dropout` kernel draws
(docs/kernels.md): element i of a tensor is kept when the uniform float of word i of the
Philox4x32-10 stream (key = seed, counter = (i / 4, step << 32 | stream)) is >= ratio.

`PhiloxDropout` replaces nn.Dropout in a reference model: the n-th dropout call of a forward
pass uses stream n, which is the n-th Dropout node of the exported ONNX graph because the export
records the calls in execution order.
"""

import numpy as np
import torch
import torch.nn as nn

_MASK32 = 0xFFFFFFFF
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85


def philox4x32(counters, key):
    """Philox4x32-10 of every row of `counters` (uint32 [N, 4]) under `key` (two ints)."""
    x = [counters[:, j].astype(np.uint64) for j in range(4)]
    k0, k1 = key[0] & _MASK32, key[1] & _MASK32
    m32 = np.uint64(_MASK32)
    for r in range(10):
        if r > 0:
            k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
        p0, p1 = _M0 * x[0], _M1 * x[2]
        hi0, lo0 = p0 >> np.uint64(32), p0 & m32
        hi1, lo1 = p1 >> np.uint64(32), p1 & m32
        x = [hi1 ^ x[1] ^ np.uint64(k0), lo1, hi0 ^ x[3] ^ np.uint64(k1), lo0]
    return np.stack(x, axis=1).astype(np.uint32)


def stream_words(seed, stream_id, count):
    """Words [0, count) of the Philox stream (seed, stream_id) (runtime/support/philox.h)."""
    blocks = np.arange((count + 3) // 4, dtype=np.uint64)
    counters = np.stack([blocks & np.uint64(_MASK32), blocks >> np.uint64(32),
                         np.full_like(blocks, stream_id & _MASK32),
                         np.full_like(blocks, stream_id >> 32)], axis=1)
    return philox4x32(counters, (seed & _MASK32, seed >> 32)).reshape(-1)[:count]


def keep_mask(seed, step, stream, shape, ratio):
    """The bool keep-mask of dropout `stream` at training step `step` (1-based)."""
    count = int(np.prod(shape, dtype=np.int64))
    words = stream_words(seed, (step << 32) | stream, count)
    uniform = (words >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)
    return (uniform >= np.float32(ratio)).reshape(shape)


class DropoutKey:
    """The (seed, step) the next forward pass draws with, and its call counter."""

    def __init__(self, seed=0):
        self.seed = seed
        self.step = 0
        self.calls = 0

    def start_step(self, step):
        self.step = step
        self.calls = 0


class PhiloxDropout(nn.Module):
    """nn.Dropout with shardc's masks: y = x * (keep ? 1/(1-p) : 0), p rounded to f32."""

    def __init__(self, p, key):
        super().__init__()
        self.p = p
        self.key = key

    def forward(self, x):
        stream = self.key.calls
        self.key.calls += 1
        keep = keep_mask(self.key.seed, self.key.step, stream, tuple(x.shape), self.p)
        scale = np.float32(1.0) / (np.float32(1.0) - np.float32(self.p))
        noise = torch.from_numpy(np.where(keep, scale, np.float32(0.0)).astype(np.float32))
        return x * noise


def use_philox_dropout(model, key):
    """Replaces every nn.Dropout of `model` by a PhiloxDropout drawing with `key`."""
    for name, child in list(model.named_children()):
        if isinstance(child, nn.Dropout):
            setattr(model, name, PhiloxDropout(child.p, key))
        else:
            use_philox_dropout(child, key)
