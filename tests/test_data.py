"""ncbook.data: bundled real data, synthetic mixtures, and on-disk data sets from tiny fakes in the real formats."""

import struct

import numpy as np
import pytest
import torch

from ncbook import data, metrics


def write_idx(path, array):
    """Write an array in MNIST's idx format (big-endian dims, magic 0x08 = uint8)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


def fake_mnist(root, folder="MNIST", n=30, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 10
    X = rng.integers(0, 256, size=(n, 28, 28))
    for stem in ("train", "t10k"):
        write_idx(root / folder / "raw" / f"{stem}-images-idx3-ubyte", X)
        write_idx(root / folder / "raw" / f"{stem}-labels-idx1-ubyte", y)
    return X, y


def test_mnist5k_is_real_balanced_and_normalised():
    X, y = data.mnist5k()
    assert X.shape == (5000, 784) and X.dtype == torch.float32
    assert torch.bincount(y).tolist() == [500] * 10
    pixels = X * data.MNIST_STD + data.MNIST_MEAN
    assert float(pixels.min()) == pytest.approx(0, abs=1e-6) and float(pixels.max()) == pytest.approx(1, abs=1e-6)
    # real digits: class means are far apart relative to their spread (NC1 well below 1, not noise)
    assert 0.05 < metrics.nc1_trace_ratio(X, y) < 5


def test_balanced_subset_is_seeded_and_balanced():
    X, y = data.mnist5k(per_class=50, seed=3)
    X2, y2 = data.mnist5k(per_class=50, seed=3)
    X3, _ = data.mnist5k(per_class=50, seed=4)
    assert torch.bincount(y).tolist() == [50] * 10
    assert torch.equal(X, X2) and not torch.equal(X, X3)
    with pytest.raises(ValueError, match="fewer than per_class"):
        data.balanced_subset(np.array([0, 0, 1]), 2)


def test_digits_and_device_dtype():
    X, y = data.digits(dtype=torch.float64)
    assert X.shape == (1797, 64) and X.dtype == torch.float64 and int(y.max()) == 9
    assert float(X.mean()) == pytest.approx(0, abs=1e-12)


def test_gaussian_mixture_spread_controls_nc1():
    tight = metrics.nc1_trace_ratio(*data.gaussian_mixture(4, 50, 8, between=1.0, within=0.01, seed=1))
    loose = metrics.nc1_trace_ratio(*data.gaussian_mixture(4, 50, 8, between=1.0, within=1.0, seed=1))
    assert tight < 1e-3 < loose
    # tr Sigma_W / tr Sigma_B ~ within^2 / (between^2 (K-1)/K): check the order of magnitude
    assert 0.3 < loose / (1.0 / (3 / 4)) < 3
    with pytest.raises(ValueError, match="finite and >= 0"):
        data.gaussian_mixture(3, 5, 2, within=-1)


@pytest.mark.parametrize("name,folder", [("mnist", "MNIST"), ("fashion-mnist", "FashionMNIST")])
def test_mnist_format_from_disk(tmp_path, name, folder):
    X, y = fake_mnist(tmp_path, folder)
    Xt, yt = data.load_dataset(name, tmp_path, per_class=2, seed=0, flatten=True)
    assert Xt.shape == (20, 784) and torch.bincount(yt).tolist() == [2] * 10
    full, yfull = data.load_dataset(name, tmp_path, train=False)
    assert full.shape == (30, 1, 28, 28)
    mean, std = (data.MNIST_MEAN, data.MNIST_STD) if name == "mnist" else (data.FASHION_MNIST_MEAN,
                                                                              data.FASHION_MNIST_STD)
    np.testing.assert_allclose((full[:, 0] * std + mean).numpy() * 255, X, atol=1e-3)
    assert yfull.tolist() == y.tolist()


def test_cifar10_binary_from_disk(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    pixels = rng.integers(0, 256, size=(5, 20, 3072), dtype=np.uint8)
    labels = np.tile(np.arange(10, dtype=np.uint8), 2)
    for i in range(5):
        rec = np.concatenate([labels[:, None], pixels[i]], axis=1)
        (folder / f"data_batch_{i + 1}.bin").write_bytes(rec.tobytes())
    X, y = data.load_dataset("cifar10", tmp_path)
    assert X.shape == (100, 3, 32, 32) and torch.bincount(y).tolist() == [10] * 10
    back = X[0].numpy() * np.array(data.CIFAR10_STD)[:, None, None] + np.array(data.CIFAR10_MEAN)[:, None, None]
    np.testing.assert_allclose(back * 255, pixels[0, 0].reshape(3, 32, 32), atol=1e-3)
    (folder / "data_batch_5.bin").write_bytes(b"\x00" * 10)
    with pytest.raises(ValueError, match="corrupted"):
        data.load_dataset("cifar10", tmp_path)


def test_missing_data_set_says_where_and_how(tmp_path):
    for name in ("mnist", "fashion-mnist", "cifar10"):
        with pytest.raises(FileNotFoundError, match="download=True") as err:
            data.load_dataset(name, tmp_path)
        assert str(tmp_path) in str(err.value)
    with pytest.raises(ValueError, match="unknown data set"):
        data.load_dataset("imagenet", tmp_path)
