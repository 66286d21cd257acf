"""Networks: an MLP of L1 non-linear layers followed by L2 linear layers (Jacot et al. eq. (1))."""

from __future__ import annotations

import copy
import math

import torch
from torch import nn


class SmoothLeakyReLU(nn.Module):
    """The smoothed leaky ReLU of Jacot et al. eq. (7), in closed form:
    sigma(x) = gamma x + (1 - gamma) (x Phi(x/s) + s phi(x/s)) - (1 - gamma)^2 / (2 pi beta),
    s = (1 - gamma)/(beta sqrt(2 pi)), i.e. the leaky ReLU max(gamma u, u) averaged over u ~ N(x, s^2),
    shifted so that sigma(0) = 0.
    sigma' = gamma + (1 - gamma) Phi(x/s) lies in [gamma, 1] and is beta-Lipschitz (Assumption 4.2)."""

    def __init__(self, gamma: float = 0.1, beta: float = 1.0):
        super().__init__()
        if not 0 < gamma < 1 or not beta >= 1:
            raise ValueError(f"Assumption 4.2 needs 0 < gamma < 1 and beta >= 1, got gamma={gamma}, beta={beta}")
        self.gamma, self.beta = gamma, beta
        self.s = (1 - gamma) / (beta * math.sqrt(2 * math.pi))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g, s = self.gamma, self.s
        u = x / s
        Phi = 0.5 * torch.special.erfc(-u / math.sqrt(2))
        phi = torch.exp(-0.5 * u * u) / math.sqrt(2 * math.pi)
        return g * x + (1 - g) * (x * Phi + s * phi) - (1 - g) ** 2 / (2 * math.pi * self.beta)

    def extra_repr(self) -> str:
        return f"gamma={self.gamma}, beta={self.beta}"


class MLP(nn.Module):
    """x -> [Linear -> activation] x L1 -> [Linear] x L2; ``forward_features`` returns every layer's output.
    The activation is the ReLU unless another module is given (e.g. :class:`SmoothLeakyReLU`).

    Bias-free by default (as in Jacot et al.); ``bias`` adds biases to every layer, ``last_bias`` to the last only
    (the cross-entropy setting of Tirer et al. Sec. 6).

    ``widths`` = [d_0, d_1, ..., d_L]: d_0 is the input dimension and d_L the number of classes K.
    The first ``num_nonlinear`` (L1) layers are followed by ReLU, the remaining L2 = L - L1 layers are linear.
    """

    def __init__(self, widths: list[int], num_nonlinear: int, bias: bool = False, last_bias: bool = False,
                 activation: nn.Module | None = None):
        super().__init__()
        L = len(widths) - 1
        if L < 1 or any(w < 1 for w in widths):
            raise ValueError(f"widths must list at least an input and an output size, all >= 1; got {widths}")
        if not 0 <= num_nonlinear <= L - 1:
            raise ValueError(f"num_nonlinear (L1) must be between 0 and L-1 = {L - 1} so the last layer is linear; "
                             f"got {num_nonlinear}")
        self.num_nonlinear = num_nonlinear
        self.activation = activation if activation is not None else nn.ReLU()
        # drawn in float32 whatever torch's default dtype, so that a seed gives the same network everywhere
        # (cast afterwards, e.g. with .double())
        self.layers = nn.ModuleList(nn.Linear(a, b, bias=bias or (last_bias and i == L - 1), dtype=torch.float32)
                                    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])))

    def forward_features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Outputs Z_1, ..., Z_L of every layer (after the ReLU for non-linear layers), each (N, d_l)."""
        out = []
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < self.num_nonlinear:
                x = self.activation(x)
            out.append(x)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_features(x)[-1]

    @property
    def weights(self) -> list[torch.Tensor]:
        """Weight matrices W_1, ..., W_L (W_l has shape d_l x d_{l-1})."""
        return [layer.weight for layer in self.layers]


class Ensemble:
    """M networks of one architecture trained together: layer l's weights of all models are stacked into one
    (M, d_l, d_{l-1}) tensor. The first layer, whose input all models share, is a single wide matrix product
    (N x d_0 times d_0 x M d_1); the later layers are batched products."""

    def __init__(self, models: list[MLP]):
        if not models:
            raise ValueError("an Ensemble needs at least one model")
        shapes = {tuple(tuple(p.shape) for p in m.parameters()) for m in models}
        if len(shapes) != 1 or len({m.num_nonlinear for m in models}) != 1:
            raise ValueError("all models of an Ensemble must have the same architecture")
        self.template = copy.deepcopy(models[0])
        self.num_nonlinear = models[0].num_nonlinear
        stack = [torch.stack([m.layers[i].weight.detach() for m in models]).clone().requires_grad_(True)
                 for i in range(len(models[0].layers))]
        self.weights = stack
        self.biases = [None if models[0].layers[i].bias is None else
                       torch.stack([m.layers[i].bias.detach() for m in models]).clone().requires_grad_(True)
                       for i in range(len(stack))]

    def __len__(self) -> int:
        return self.weights[0].shape[0]

    def parameters(self) -> list[torch.Tensor]:
        return self.weights + [b for b in self.biases if b is not None]

    def forward_features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Every layer's output for every model: a list of (M, N, d_l) tensors (views of (M, d_l, N) ones)."""
        M, out, h = len(self), [], None
        for i, (W, b) in enumerate(zip(self.weights, self.biases)):
            if i == 0:    # shared input: one wide product (M d_1 x d_0 times d_0 x N), split by model
                h = (W.reshape(-1, W.shape[2]) @ x.T).reshape(M, W.shape[1], x.shape[0])
            else:         # columns are samples, so every product is a contiguous batched matmul
                h = torch.bmm(W, h)
            if b is not None:
                h = h + b.unsqueeze(2)
            if i < self.num_nonlinear:
                h = self.template.activation(h)
            out.append(h.transpose(1, 2))
        return out

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_features(x)[-1]

    def model(self, i: int) -> MLP:
        """Model i as an ordinary MLP (a copy)."""
        m = copy.deepcopy(self.template)
        with torch.no_grad():
            for layer, W, b in zip(m.layers, self.weights, self.biases):
                layer.weight.copy_(W[i])
                if b is not None:
                    layer.bias.copy_(b[i])
        return m
