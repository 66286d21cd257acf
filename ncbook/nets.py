"""Networks: an MLP of L1 non-linear layers followed by L2 linear layers (Jacot et al. eq. (1))."""

from __future__ import annotations

import copy
import math
from typing import cast

import numpy as np
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


def mlp_layer_names(num_layers: int, num_nonlinear: int) -> list[str]:
    """The names of an :class:`MLP`'s layer outputs: "hidden 1", ... for the non-linear layers, "linear 1", ... for
    the linear layers before the last, and "output"."""
    return ([f"hidden {i + 1}" for i in range(num_nonlinear)]
            + [f"linear {i + 1}" for i in range(num_layers - num_nonlinear - 1)] + ["output"])


def padded_layer_names(names: list[list[str]]) -> np.ndarray:
    """The layer names of networks of several depths as one [depth, layer] array, padded with "" where a network is
    shallower (as its metrics are padded with NaN)."""
    most = max(len(n) for n in names)
    return np.array([list(n) + [""] * (most - len(n)) for n in names])


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
    def linears(self) -> list[nn.Linear]:
        """The layers, typed (``self.layers`` holds nothing else)."""
        return [cast(nn.Linear, layer) for layer in self.layers]

    @property
    def weights(self) -> list[torch.Tensor]:
        """Weight matrices W_1, ..., W_L (W_l has shape d_l x d_{l-1})."""
        return [layer.weight for layer in self.linears]

    @property
    def layer_names(self) -> list[str]:
        return mlp_layer_names(len(self.layers), self.num_nonlinear)


def portable_uniform_(t: torch.Tensor, bound: float) -> torch.Tensor:
    """t ~ U(-bound, bound) as torch's ``uniform_`` draws it on a CPU with FMA (AVX2, AVX-512), on every CPU.

    torch computes ``from + u (to - from)`` in float32 for the 24-bit uniform u; with FMA that is rounded once, on a
    CPU without it (or under ATEN_CPU_CAPABILITY=default) twice, and about half the weights differ by one ulp. Here u
    is drawn by ``uniform_(0, 1)`` (exact on every CPU, same generator stream) and b (2u - 1), with b = float32(bound),
    is exact in float64 (at most 49 bits), so the one rounding to float32 gives the FMA result everywhere (then
    cast to ``t``'s dtype, as ``MLP(...).double()`` casts its float32 draw)."""
    with torch.no_grad():
        u = torch.empty_like(t, dtype=torch.float32).uniform_(0, 1).double()
        b = float(torch.tensor(bound, dtype=torch.float32))
        return t.copy_(((u * 2 - 1) * b).float())


def portable_default_init_(model: nn.Module) -> nn.Module:
    """Redraw every nn.Linear of ``model`` from torch's default law (kaiming_uniform_ with a = sqrt 5, i.e.
    U(-1/sqrt(fan_in), 1/sqrt(fan_in))), in module order, with the same bits on any CPU (``portable_uniform_``):
    on an FMA CPU the network equals the one torch draws from the same seed, bit for bit."""
    for m in model.modules():
        if isinstance(m, nn.Linear):
            fan_in = m.weight.shape[1]
            std = nn.init.calculate_gain("leaky_relu", math.sqrt(5)) / math.sqrt(fan_in)
            portable_uniform_(m.weight, math.sqrt(3.0) * std)
            if m.bias is not None:
                portable_uniform_(m.bias, 1 / math.sqrt(fan_in))
    return model


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
        stack = [torch.stack([m.linears[i].weight.detach() for m in models]).clone().requires_grad_(True)
                 for i in range(len(models[0].layers))]
        self.weights = stack
        self.biases = [None if models[0].linears[i].bias is None else
                       torch.stack([m.linears[i].bias.detach() for m in models]).clone().requires_grad_(True)
                       for i in range(len(stack))]

    def __len__(self) -> int:
        return self.weights[0].shape[0]

    def parameters(self) -> list[torch.Tensor]:
        return self.weights + [b for b in self.biases if b is not None]

    def forward_features(self, x: torch.Tensor, preactivations: bool = False,
                         params: list[torch.Tensor] | None = None):
        """Every layer's output for every model: a list of (M, N, d_l) tensors (views of (M, d_l, N) ones); with
        ``preactivations`` also the input of every non-linearity (None for the linear layers). With ``params`` (as
        :meth:`parameters` orders them) the models are evaluated at those weights instead of their own, so that
        ``torch.func.grad`` can differentiate through them."""
        weights, biases = self.weights, self.biases
        if params is not None:
            weights, rest = params[:len(weights)], iter(params[len(weights):])
            biases = [None if b is None else next(rest) for b in biases]
        M, out, pre, h = len(self), [], [], None
        for i, (W, b) in enumerate(zip(weights, biases)):
            if i == 0:    # shared input: one wide product (M d_1 x d_0 times d_0 x N), split by model
                h = (W.reshape(-1, W.shape[2]) @ x.T).reshape(M, W.shape[1], x.shape[0])
            else:         # columns are samples, so every product is a contiguous batched matmul
                h = torch.bmm(W, cast(torch.Tensor, h))     # (h: set by layer 0)
            if b is not None:
                h = h + b.unsqueeze(2)
            pre.append(h.transpose(1, 2) if i < self.num_nonlinear else None)
            if i < self.num_nonlinear:
                h = self.template.activation(h)
            out.append(h.transpose(1, 2))
        return (out, pre) if preactivations else out

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_features(x)[-1]

    @property
    def layer_names(self) -> list[str]:
        return self.template.layer_names

    def model(self, i: int) -> MLP:
        """Model i as an ordinary MLP (a copy)."""
        m = copy.deepcopy(self.template)
        with torch.no_grad():
            for layer, W, b in zip(m.linears, self.weights, self.biases):
                layer.weight.copy_(W[i])
                if b is not None:
                    layer.bias.copy_(b[i])
        return m


# ----------------------------------------------------------------------------------------------------------------
# convolutional backbones with an MLP head (Jacot et al. Sec. 6: ResNet20 + MLP head; Tirer et al. App. E: ResNet18)


class BasicBlock(nn.Module):
    """The two-convolution residual block of He et al. (2016) with batch norm; a 1x1 convolution on the shortcut
    when the shape changes."""

    def __init__(self, c_in: int, c_out: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


def resnet_backbone(depth: int = 20, in_channels: int = 3, width: int = 16) -> tuple[nn.Module, int]:
    """A ResNet backbone (no classifier) and its feature dimension.

    ``depth`` 20 (or any 6n+2): the CIFAR ResNet of He et al. (2016), three stages of n blocks with width, 2 width,
    4 width channels (width 16 is the original ResNet20); ``depth`` 18: ResNet18 with a 3x3 stem and no max-pool,
    the CIFAR variant used by Tirer et al. App. E (torchvision's blocks), width 64 as the original.
    """
    if depth == 18:
        if width != 64:
            raise ValueError(f"ResNet18 has the fixed widths 64-128-256-512; got width={width}")
        return ResNet18(in_channels), 512
    if depth < 8 or (depth - 2) % 6:
        raise ValueError(f"a CIFAR ResNet has depth 6n+2 (8, 14, 20, 32, ...) or is ResNet18; got depth={depth}")
    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    n, layers, c = (depth - 2) // 6, [], width
    layers += [nn.Conv2d(in_channels, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c), nn.ReLU()]
    for stage, c_out in enumerate((width, 2 * width, 4 * width)):
        for b in range(n):
            layers.append(BasicBlock(c, c_out, 2 if stage > 0 and b == 0 else 1))
            c = c_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    return nn.Sequential(*layers), c


class ResNet18(nn.Module):
    """ResNet18 without its classifier, the CIFAR variant of Tirer et al. App. E (torchvision's blocks, a 3x3 stem,
    no max-pool). ``forward`` gives the deepest features (the globally average-pooled output of the fourth residual
    stage, 512 numbers); ``forward_stages`` also the pooled output of the third stage (256): the "intermediate
    features (output of 3 out of the 4 Res Block[s])" of Tirer et al. Fig. 4c/5c."""

    layer_names = ("res block 3", "res block 4")

    def __init__(self, in_channels: int = 3):
        super().__init__()
        from torchvision.models.resnet import BasicBlock as TVBlock
        from torchvision.models.resnet import ResNet

        net = ResNet(TVBlock, [2, 2, 2, 2])
        net.conv1 = nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
        net.maxpool, net.fc = nn.Identity(), nn.Identity()
        self.net = net

    def forward_stages(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The pooled outputs of the third and the fourth residual stage, (N, 256) and (N, 512)."""
        n = self.net
        h3 = n.layer3(n.layer2(n.layer1(n.relu(n.bn1(n.conv1(x))))))
        h4 = n.layer4(h3)
        return [torch.flatten(n.avgpool(h3), 1), torch.flatten(n.avgpool(h4), 1)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_stages(x)[-1]


def backbone_stages(backbone: nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """The measured outputs of a backbone: its ``forward_stages`` if it has them (ResNet18), else its output."""
    stages = getattr(backbone, "forward_stages", None)
    return stages(x) if stages is not None else [backbone(x)]


class BackboneHead(nn.Module):
    """A feature extractor (e.g. a ResNet) followed by an :class:`MLP` head of L1 non-linear and L2 linear layers.

    ``forward_features`` returns the backbone's output (for ResNet18 also its third stage's, :class:`ResNet18`)
    followed by every head layer's output, and ``weights`` the matching weight matrices (None for the backbone), so
    the NC metrics are measured "starting from the output of the backbone" (Jacot et al. Sec. 6); with a one-layer
    head the backbone's output is Tirer et al.'s H.
    """

    def __init__(self, backbone: nn.Module, feature_dim: int, head_widths: list[int], num_nonlinear: int,
                 last_bias: bool = False):
        super().__init__()
        self.backbone = backbone
        self.head = MLP([feature_dim, *head_widths], num_nonlinear, last_bias=last_bias)

    def forward_features(self, x: torch.Tensor) -> list[torch.Tensor]:
        stages = backbone_stages(self.backbone, x)
        return [*stages, *self.head.forward_features(stages[-1])]

    def preactivations(self, x: torch.Tensor) -> list[torch.Tensor | None]:
        """The input of every head ReLU (None for the backbone and the linear layers), for the negativity metric."""
        h = self.backbone(x)
        out: list[torch.Tensor | None] = [None] * self.num_stages
        for i, layer in enumerate(self.head.layers):
            z = layer(h)
            out.append(z if i < self.head.num_nonlinear else None)
            h = self.head.activation(z) if i < self.head.num_nonlinear else z
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))

    @property
    def num_stages(self) -> int:
        """How many of the backbone's outputs are measured (2 for ResNet18, else 1)."""
        return len(getattr(self.backbone, "layer_names", ("backbone",)))

    @property
    def layer_names(self) -> list[str]:
        """The names of the outputs of :meth:`forward_features`: the backbone's (or "backbone"), then the head's."""
        return [*getattr(self.backbone, "layer_names", ("backbone",)), *self.head.layer_names]

    @property
    def weights(self) -> list[torch.Tensor | None]:
        return [None] * self.num_stages + self.head.weights

    def last_layer_parameters(self) -> list[nn.Parameter]:
        """The classifier's weight (and bias): the "W" of Tirer et al.'s weight-decay ablations."""
        return list(self.head.layers[-1].parameters())


class BlockMLP(nn.Module):
    """Hidden blocks Linear -> BatchNorm -> ReLU and a linear classifier, grown one block at a time for layer-wise
    training (Tirer et al. Sec. 6, App. E.1): :meth:`add_block` freezes every existing block (weights and batch-norm
    statistics) and inserts a freshly initialised one before the classifier, which keeps its weights."""

    def __init__(self, d_in: int, width: int, num_classes: int, batch_norm: bool = True):
        super().__init__()
        if min(d_in, width, num_classes) < 1:
            raise ValueError(f"sizes must be >= 1, got d_in={d_in}, width={width}, num_classes={num_classes}")
        self.d_in, self.width, self.batch_norm = d_in, width, batch_norm
        self.blocks = nn.ModuleList([self._block(d_in)])
        self.classifier = nn.Linear(width, num_classes)

    def _block(self, d: int) -> nn.Sequential:
        return nn.Sequential(nn.Linear(d, self.width), *([nn.BatchNorm1d(self.width)] if self.batch_norm else []),
                             nn.ReLU())

    def add_block(self) -> None:
        for p in self.blocks.parameters():
            p.requires_grad_(False)
        self.blocks.append(self._block(self.width).to(self.classifier.weight))
        self.train(self.training)

    def train(self, mode: bool = True) -> BlockMLP:
        super().train(mode)
        for block in self.blocks[:-1]:   # frozen blocks keep their batch-norm statistics
            block.eval()
        return self

    def forward_features(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The deepest features H and the logits."""
        for block in self.blocks:
            x = block(x)
        return [x, self.classifier(x)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_features(x)[-1]

    @property
    def weights(self) -> list[torch.Tensor | None]:
        return [None, self.classifier.weight]

    def last_layer_parameters(self) -> list[nn.Parameter]:
        return list(self.classifier.parameters())
