"""Collapse metrics of any model, layer by layer: forward hooks on named sub-modules of a ``torch.nn.Module`` feed
each batch's outputs into an accumulator per layer, and the model needs no change.

    stats = layer_stats(model, ["layer3", "layer4", "avgpool"], loader, num_classes=10)
    {name: metrics.nc1_trace_ratio(s) for name, s in stats.items()}

Which accumulator a layer gets (:func:`plan`): :class:`ncbook.metrics.StreamingClassStats`, one pass, K d x d
float64 scatters, where those and the few batches it keeps fit in ``max_bytes`` (:func:`scatter_bytes`, its peak);
else :class:`ncbook.metrics.TwoPassClassStats`, K d numbers, which runs the model over the batches a second time (so
they must be re-iterable: a list, a DataLoader without shuffling). A convolutional layer's output, flattened, is
wide: layer3 of the CIFAR ResNet18 has d = 16,384, whose scatters would take 21 GB.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import torch

from . import metrics
from .metrics import ClassStats, StreamingClassStats, TwoPassClassStats

MAX_BYTES = 1 << 30
"""The default memory a layer's accumulator may take (1 GiB)."""


def scatter_bytes(num_classes: int, dim: int, batch_rows: int = 0, itemsize: int = 8) -> int:
    """Peak bytes of :class:`~ncbook.metrics.StreamingClassStats` over batches of ``batch_rows`` features of
    ``itemsize`` bytes, to its ``finalize``: the K d x d float64 scatters, the buffer of the ``FLUSH_BATCHES`` batches
    it keeps, as many rows again for a class's rows gathered at a flush (all of them, if one class has them all), one
    batch in flight (a copy in the working precision) and two bands of rows of a product (at most ``SYMMETRIC_ROWS``
    rows and ``FLUSH_CHUNK_BYTES`` each, float64); it makes no other d x d array (tests/test_hooks.py measures the peak
    in a child process). ``batch_rows`` 0: the scatters alone."""
    kept = (2 * metrics.FLUSH_BATCHES + 1) * batch_rows * dim * itemsize
    band = metrics.band_rows(dim) * dim * 8
    return 8 * num_classes * dim * dim + (kept + 2 * band if batch_rows else 0)


def two_pass_bytes(num_classes: int, dim: int) -> int:
    """Bytes of :class:`~ncbook.metrics.TwoPassClassStats`' state: the K d float64 class sums and means."""
    return 2 * 8 * num_classes * dim


def plan(num_classes: int, dim: int, max_bytes: int = MAX_BYTES, batch_rows: int = 0, itemsize: int = 8) -> str:
    """"one pass" where :func:`scatter_bytes` (of batches of ``batch_rows`` rows) fits in ``max_bytes``, else "two
    passes" where K d numbers do; a one-line ValueError where neither does (checked before anything is allocated)."""
    if scatter_bytes(num_classes, dim, batch_rows, itemsize) <= max_bytes:
        return "one pass"
    if two_pass_bytes(num_classes, dim) <= max_bytes:
        return "two passes"
    raise ValueError(f"a layer of {dim:,} features and {num_classes} classes needs "
                     f"{two_pass_bytes(num_classes, dim) / 2**20:,.0f} MiB even in two passes, over max_bytes = "
                     f"{max_bytes / 2**20:,.0f} MiB: raise max_bytes or hook a narrower layer")


def _run(model: torch.nn.Module, batches: Iterable, labels: dict) -> int:
    """Run the model over every (inputs, labels) batch without gradients, the labels where the hooks see them."""
    seen = 0
    with torch.no_grad():
        for x, y in batches:
            labels["y"] = y
            model(x)
            seen += 1
    return seen


def layer_stats(model: torch.nn.Module, layers: list[str], batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
                num_classes: int, device: torch.device | str | None = None,
                max_bytes: int = MAX_BYTES) -> dict[str, ClassStats]:
    """:class:`~ncbook.metrics.ClassStats` of the outputs of each named sub-module (``model.named_modules()``
    names), each sample's output flattened, over every (inputs, labels) batch, each layer's accumulator chosen by
    :func:`plan` within ``max_bytes``; the model runs in eval mode without gradients (twice where a layer needs two
    passes), its mode is restored and the hooks removed afterwards, whatever happens."""
    modules = dict(model.named_modules())
    unknown = [name for name in layers if name not in modules]
    if unknown:
        raise ValueError(f"no sub-module named {', '.join(map(repr, unknown))} in the model; its names are "
                         f"model.named_modules(), e.g. {', '.join(list(modules)[1:6])}")
    if not layers:
        raise ValueError("name at least one layer to record")
    one_shot = isinstance(batches, Iterator)
    streams: dict[str, StreamingClassStats] = {}
    two: dict[str, TwoPassClassStats] = {}
    labels: dict[str, torch.Tensor] = {}
    second = {"on": False}

    def hook(name: str):
        def record(_module, _inputs, output):
            if not isinstance(output, torch.Tensor):
                raise TypeError(f"layer {name!r} returns {type(output).__name__}, not a tensor: hook a sub-module "
                                "that returns one")
            Z = output.detach().flatten(1)
            if device is not None:
                Z = Z.to(device)
            if second["on"]:
                if name in two:
                    two[name].second(Z, labels["y"])
                return
            if name not in streams and name not in two:
                if plan(num_classes, Z.shape[1], max_bytes, Z.shape[0], Z.element_size()) == "one pass":
                    streams[name] = StreamingClassStats(num_classes, Z.shape[1], Z.device)
                elif one_shot:
                    raise ValueError(f"layer {name!r} has {Z.shape[1]:,} features, too many for one pass within "
                                     f"max_bytes, and two passes need batches that can be read twice (a list or a "
                                     "DataLoader), not a one-shot iterator")
                else:
                    two[name] = TwoPassClassStats(num_classes)
            (streams[name].update if name in streams else two[name].first)(Z, labels["y"])
        return record

    handles = [modules[name].register_forward_hook(hook(name)) for name in layers]
    training = model.training
    try:
        model.eval()
        if not _run(model, batches, labels):
            raise ValueError("no batches were given, so there is nothing to measure")
        if two:
            second["on"] = True
            _run(model, batches, labels)
    finally:
        for h in handles:
            h.remove()
        model.train(training)
    silent = [name for name in layers if name not in streams and name not in two]
    if silent:
        raise ValueError(f"layer(s) {', '.join(map(repr, silent))} never ran in the model's forward pass")
    return {name: streams[name].finalize() if name in streams else two[name].finalize() for name in layers}
