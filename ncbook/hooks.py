"""Collapse metrics of any model, layer by layer: forward hooks on named sub-modules of a ``torch.nn.Module`` feed
each batch's outputs into one :class:`ncbook.metrics.StreamingClassStats` per layer, so the memory is K d^2 numbers a
layer whatever the number of samples, and the model needs no change.

    stats = layer_stats(model, ["layer3", "layer4", "avgpool"], loader, num_classes=10)
    {name: metrics.nc1_trace_ratio(s) for name, s in stats.items()}
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from .metrics import ClassStats, StreamingClassStats


def layer_stats(model: torch.nn.Module, layers: list[str], batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
                num_classes: int, device: torch.device | str | None = None) -> dict[str, ClassStats]:
    """:class:`~ncbook.metrics.ClassStats` of the outputs of each named sub-module (``model.named_modules()``
    names), each sample's output flattened, over every (inputs, labels) batch; the model runs in eval mode without
    gradients, its mode is restored and the hooks removed afterwards, whatever happens."""
    modules = dict(model.named_modules())
    unknown = [name for name in layers if name not in modules]
    if unknown:
        raise ValueError(f"no sub-module named {', '.join(map(repr, unknown))} in the model; its names are "
                         f"model.named_modules(), e.g. {', '.join(list(modules)[1:6])}")
    if not layers:
        raise ValueError("name at least one layer to record")
    streams: dict[str, StreamingClassStats] = {}
    current: dict[str, torch.Tensor] = {}

    def hook(name: str):
        def record(_module, _inputs, output):
            if not isinstance(output, torch.Tensor):
                raise TypeError(f"layer {name!r} returns {type(output).__name__}, not a tensor: hook a sub-module "
                                "that returns one")
            Z = output.detach().flatten(1)
            if name not in streams:
                streams[name] = StreamingClassStats(num_classes, Z.shape[1], device or Z.device)
            streams[name].update(Z, current["labels"])
        return record

    handles = [modules[name].register_forward_hook(hook(name)) for name in layers]
    training = model.training
    try:
        model.eval()
        with torch.no_grad():
            for x, y in batches:
                current["labels"] = y
                model(x)
    finally:
        for h in handles:
            h.remove()
        model.train(training)
    if not streams:
        raise ValueError("no batches were given, so there is nothing to measure")
    return {name: streams[name].finalize() for name in layers}
