"""Exports a small MLP classifier with a cross-entropy loss for the e2e tests.

    python3 export_mlp_classifier.py --out DIR

Graph inputs: x (float32 [8,20]), y (int64 [8]). Outputs: loss (scalar, first), logits [8,5].
Two ReLU hidden layers and one tanh-approximated GELU layer (opset 17 has no Gelu op, so torch
exports the tanh formula with Pow/Tanh/Mul/Add); the loss exports as SoftmaxCrossEntropyLoss.
"""

import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_util  # noqa: E402

BATCH = 8
IN_FEATURES = 20
HIDDEN = 64
CLASSES = 5


class MLPClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(IN_FEATURES, HIDDEN),
            nn.ReLU(),
            nn.Linear(HIDDEN, HIDDEN),
            nn.ReLU(),
            nn.Linear(HIDDEN, HIDDEN // 2),
            nn.GELU(approximate="tanh"),
        )
        self.head = nn.Linear(HIDDEN // 2, CLASSES)

    def forward(self, x, y):
        logits = self.head(self.body(x))
        loss = F.cross_entropy(logits, y)
        return loss, logits


def main():
    args = export_util.parse_args(__doc__.splitlines()[0])
    torch.manual_seed(0)
    model = MLPClassifier()
    rows = export_util.sample_rows(args, BATCH)
    x = torch.randn(rows, IN_FEATURES)
    y = torch.randint(0, CLASSES, (rows,), dtype=torch.long)
    export_util.export_model(model, (x, y), ["x", "y"], ["loss", "logits"], args.out)


if __name__ == "__main__":
    main()
