"""Networks: an MLP of L1 non-linear layers followed by L2 linear layers (Jacot et al. eq. (1))."""

from __future__ import annotations

import copy

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
        return _features(self, dict(self.named_parameters()), x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_features(x)[-1]

    @property
    def weights(self) -> list[torch.Tensor]:
        """Weight matrices W_1, ..., W_L (W_l has shape d_l x d_{l-1})."""
        return [layer.weight for layer in self.layers]


class Ensemble:
    """M networks of one architecture trained together: their parameters are stacked (``torch.func``) and one
    vectorised forward pass (``vmap``) evaluates all of them on the same input."""

    def __init__(self, models: list[MLP]):
        if not models:
            raise ValueError("an Ensemble needs at least one model")
        shapes = {tuple(tuple(p.shape) for p in m.parameters()) for m in models}
        if len(shapes) != 1 or len({m.num_nonlinear for m in models}) != 1:
            raise ValueError("all models of an Ensemble must have the same architecture")
        self.template = copy.deepcopy(models[0]).to("meta")
        params, _ = torch.func.stack_module_state(models)
        self.params = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}

    def __len__(self) -> int:
        return next(iter(self.params.values())).shape[0]

    def parameters(self) -> list[torch.Tensor]:
        return list(self.params.values())

    @property
    def weights(self) -> list[torch.Tensor]:
        """Stacked weight matrices, each (M, d_l, d_{l-1})."""
        return [self.params[f"layers.{i}.weight"] for i in range(len(self.template.layers))]

    def forward_features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Every layer's output for every model: a list of (M, N, d_l) tensors."""
        return torch.func.vmap(lambda params: _features(self.template, params, x))(self.params)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_features(x)[-1]

    def model(self, i: int) -> MLP:
        """Model i as an ordinary MLP (a copy)."""
        m = copy.deepcopy(self.template).to_empty(device=self.weights[0].device)
        m.load_state_dict({k: v[i].detach().clone() for k, v in self.params.items()})
        return m


def _features(template: MLP, params: dict[str, torch.Tensor], x: torch.Tensor) -> list[torch.Tensor]:
    """MLP.forward_features with the weights taken from ``params`` (used under vmap)."""
    out = []
    for i in range(len(template.layers)):
        b = params.get(f"layers.{i}.bias")
        x = torch.nn.functional.linear(x, params[f"layers.{i}.weight"], b)
        if i < template.num_nonlinear:
            x = torch.relu(x)
        out.append(x)
    return out
