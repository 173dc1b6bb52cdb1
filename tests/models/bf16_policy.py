"""The cast policy of `shardc --precision bf16`, applied to a PyTorch module: the reference the
bf16 training runs are checked against.

Every matrix product reads its operands rounded to bfloat16 and its result is rounded to
bfloat16; the product accumulates in float32 (the rounded operands are multiplied as float32
tensors, whose products of bf16 values are exact); everything else (LayerNorm, softmax, the
loss, the optimizer and its float32 master weights) stays float32. Rounding is
`x.to(torch.bfloat16).to(torch.float32)`, whose autograd rounds the gradient flowing back the
same way, as shardc's cast gradient does.

Products as torch.onnx exports them: `F.linear` on a 2-D input is a Gemm whose bias is part of
the product (rounded, added before the result is rounded); on more dimensions it is a MatMul
followed by an Add of the unrounded bias; `@`/`torch.matmul` is a MatMul.
"""

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode


def bf16_round(x, dtype=torch.bfloat16):
    return x.to(dtype).to(torch.float32)


class BF16Matmuls(TorchFunctionMode):
    """`with BF16Matmuls(): loss = model(...)`: the forward (and so the backward) under the
    policy above. `BF16Matmuls(torch.float16)`: the same policy in float16 (shardc --precision
    fp16)."""

    def __init__(self, dtype=torch.bfloat16):
        super().__init__()
        self.dtype = dtype

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        dtype = self.dtype

        def bf16_round(x):  # noqa: F811 (the policy's rounding, in this mode's dtype)
            return x.to(dtype).to(torch.float32)

        if func is F.linear:
            x, w = args[0], args[1]
            b = args[2] if len(args) > 2 else kwargs.get("bias")
            if x.dim() == 2:  # Gemm: the bias is an operand of the product
                y = torch.matmul(bf16_round(x), bf16_round(w).t())
                if b is not None:
                    y = y + bf16_round(b)
                return bf16_round(y)
            y = bf16_round(torch.matmul(bf16_round(x), bf16_round(w).t()))
            return y + b if b is not None else y
        if func in (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__):
            a, b = args[0], args[1]
            return bf16_round(torch.matmul(bf16_round(a), bf16_round(b)))
        return func(*args, **kwargs)
