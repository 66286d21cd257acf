"""Networks: an MLP of L1 non-linear layers followed by L2 linear layers (Jacot et al. eq. (1))."""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    """x -> [Linear -> ReLU] x L1 -> [Linear] x L2, bias-free; ``forward_features`` returns every layer's output.

    ``widths`` = [d_0, d_1, ..., d_L]: d_0 is the input dimension and d_L the number of classes K.
    The first ``num_nonlinear`` (L1) layers are followed by ReLU, the remaining L2 = L - L1 layers are linear.
    """

    def __init__(self, widths: list[int], num_nonlinear: int, bias: bool = False):
        super().__init__()
        L = len(widths) - 1
        if L < 1 or any(w < 1 for w in widths):
            raise ValueError(f"widths must list at least an input and an output size, all >= 1; got {widths}")
        if not 0 <= num_nonlinear <= L - 1:
            raise ValueError(f"num_nonlinear (L1) must be between 0 and L-1 = {L - 1} so the last layer is linear; "
                             f"got {num_nonlinear}")
        self.num_nonlinear = num_nonlinear
        self.layers = nn.ModuleList(nn.Linear(a, b, bias=bias) for a, b in zip(widths[:-1], widths[1:]))

    def forward_features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Outputs Z_1, ..., Z_L of every layer (after the ReLU for non-linear layers), each (N, d_l)."""
        out = []
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < self.num_nonlinear:
                x = torch.relu(x)
            out.append(x)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_features(x)[-1]

    @property
    def weights(self) -> list[torch.Tensor]:
        """Weight matrices W_1, ..., W_L (W_l has shape d_l x d_{l-1})."""
        return [layer.weight for layer in self.layers]
