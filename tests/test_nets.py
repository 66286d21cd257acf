"""ncbook.nets: the MLP, the ensemble of MLPs, the ResNets, and initialisation independent of torch's default dtype."""


import os
import subprocess
import sys

import pytest
import torch
from torch import nn

from ncbook.nets import MLP, portable_default_init_, resnet_backbone


@pytest.mark.slow
def test_resnet18_has_torchvisions_parameter_count_less_stem_and_classifier():
    """torchvision's ResNet18 has 11,689,512 parameters; ours swaps the 7x7x3x64 stem for a 3x3 one and drops the
    512 x 1000 classifier (+ bias): 11,689,512 - 9,408 + 1,728 - 513,000."""
    net, dim = resnet_backbone(18, in_channels=3, width=64)
    assert dim == 512
    assert sum(p.numel() for p in net.parameters()) == 11_689_512 - 9_408 + 1_728 - 513_000
    assert net(torch.randn(2, 3, 32, 32)).shape == (2, 512)


def test_cifar_resnet_shapes_and_bad_depths():
    net, dim = resnet_backbone(20, in_channels=1, width=4)
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3)]
    assert len(convs) == 19 and dim == 16            # 19 conv layers + the classifier = ResNet20
    assert net(torch.randn(3, 1, 28, 28)).shape == (3, 16)
    with pytest.raises(ValueError, match="6n\\+2"):
        resnet_backbone(19)
    with pytest.raises(ValueError, match="fixed widths"):
        resnet_backbone(18, width=32)


def test_network_init_does_not_depend_on_torch_default_dtype():
    torch.manual_seed(0)
    a = MLP([5, 4, 3], 1)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(0)
        b = MLP([5, 4, 3], 1)
    finally:
        torch.set_default_dtype(old)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_mlp_layers_are_relu_then_linear():
    torch.manual_seed(0)
    net = MLP([5, 7, 6, 4, 3], num_nonlinear=2).double()
    x = torch.randn(11, 5, dtype=torch.float64)
    feats = net.forward_features(x)
    assert [f.shape[1] for f in feats] == [7, 6, 4, 3]
    assert (feats[0] >= 0).all() and (feats[1] >= 0).all()
    # the linear head is exactly the product of its matrices
    W3, W4 = net.weights[2], net.weights[3]
    assert torch.allclose(feats[3], feats[1] @ (W4 @ W3).T, atol=1e-12)
    with pytest.raises(ValueError, match="L-1"):
        MLP([5, 3], num_nonlinear=1)


@pytest.mark.slow
def test_resnet18_records_the_third_stage_as_intermediate_features():
    """Tirer et al. Fig. 4c/5c: the pooled output of 3 of the 4 residual stages is measured before the deepest
    features; the deepest are what the classifier sees, and the weights line up with the features."""
    from ncbook.nets import BackboneHead
    torch.manual_seed(0)
    net, dim = resnet_backbone(18, in_channels=1, width=64)
    model = BackboneHead(net, dim, [10], 0).eval()
    x = torch.randn(4, 1, 28, 28)
    feats = model.forward_features(x)
    assert [f.shape[1] for f in feats] == [256, 512, 10]
    assert model.layer_names == ["res block 3", "res block 4", "output"]
    assert len(model.weights) == 3 and model.weights[:2] == [None, None]
    assert torch.equal(feats[-1], model(x)) and torch.equal(feats[1], net(x))
    assert model.preactivations(x) == [None, None, None]


def test_layer_names_follow_the_architecture():
    from ncbook.nets import BackboneHead, Ensemble
    assert MLP([5, 4, 4, 4, 3], 2).layer_names == ["hidden 1", "hidden 2", "linear 1", "output"]
    assert Ensemble([MLP([5, 4, 3], 1)]).layer_names == ["hidden 1", "output"]
    net, dim = resnet_backbone(8, in_channels=1, width=2)
    model = BackboneHead(net, dim, [6, 10], 1)
    assert model.layer_names == ["backbone", "hidden 1", "output"]
    assert len(model.forward_features(torch.randn(2, 1, 8, 8))) == len(model.layer_names) == len(model.weights)


PORTABLE_DRAW = """
import hashlib, torch
from ncbook.nets import MLP, portable_default_init_
m = MLP([30, 20, 10, 5], 1, bias=True)
torch.manual_seed(3)
portable_default_init_(m)
print(hashlib.sha1(b"".join(p.detach().numpy().tobytes() for p in m.parameters())).hexdigest())
"""


def test_portable_init_is_torchs_fma_draw_on_every_cpu():
    """torch's own uniform_ differs by one ulp in about half the weights between an FMA CPU and one without
    (ATEN_CPU_CAPABILITY=default); portable_default_init_ gives the same bits under both, and on an FMA CPU the bits
    that torch draws from the same seed."""
    def draw(capability):
        env = {**os.environ, "ATEN_CPU_CAPABILITY": capability}
        return subprocess.run([sys.executable, "-c", PORTABLE_DRAW], env=env, capture_output=True, text=True,
                              check=True).stdout
    assert draw("default") == draw("avx2")
    if torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"):
        torch.manual_seed(3)
        a = MLP([30, 20, 10, 5], 1, bias=True)
        b = MLP([30, 20, 10, 5], 1, bias=True).double()
        torch.manual_seed(3)
        portable_default_init_(b)
        for p, q in zip(a.parameters(), b.parameters()):
            assert q.dtype == torch.float64 and torch.equal(p.double(), q)
