"""A second device simulated on the CPU, to test that code honours ``device`` without a GPU.

Inside :func:`simulated_device`, ``device="meta"`` names the simulated device. Tensors put there are real CPU
tensors whose storage is tagged; ``.device`` reports ``meta`` for them, so code that reads a tensor's device
follows it as it would on a GPU. Every operation that mixes tensors on the two devices (0-dim tensors aside, as on
CUDA) raises :class:`DeviceMismatch`, as CUDA would, and so does ``.numpy()`` of a tensor on the device.

Two modes cooperate. The dispatch mode sees every ATen operation, the autograd engine's and optimisers' included:
it runs factory operations asked for on ``meta`` on the CPU, tags results, and checks arguments. The function mode
sees Python-level calls: it answers ``.device``, handles ``.to``/``.cpu``, and records which device each Python call
works on, so that tensors a C++ kernel creates with ``self.options()`` (e.g. inside ``one_hot``) land where
they would on a GPU: on the device of the call's inputs, or where a factory function's ``device`` points.

The dispatch mode also counts ``host_reads``: every value read back from the device to the host (``.item()``,
``bool()`` or ``float()`` of a device tensor, ``.tolist()``, ``.cpu()``), each of which waits for the device on a
real GPU, and ``device_ops``: the operations that run on the device, each a kernel launch on a GPU."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

SIMULATED = torch.device("meta")
_INDEXING = {"index", "index_put_", "index_put", "_index_put_impl_"}   # a device tensor may take CPU indices



_INDEX_DTYPES = (torch.long, torch.int, torch.bool)


class DeviceMismatch(AssertionError):
    """An operation mixed tensors on the simulated device and on the CPU, which a real device would refuse."""


def _ptr(t: torch.Tensor) -> int:
    """The address of ``t``'s storage, through torch.func's wrappers (grad, vmap)."""
    while torch._C._functorch.is_functorch_wrapped_tensor(t):
        t = torch._C._functorch.get_unwrapped(t)
    return t.untyped_storage().data_ptr()


def _tensors(tree) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, torch.Tensor)]


def _is_simulated(device) -> bool | None:
    """True for the simulated device, False for the CPU, None when no device is named."""
    if device is None:
        return None
    if isinstance(device, torch.Tensor):
        return None
    return torch.device(device).type == SIMULATED.type


class _Dispatch(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.on: set[int] = set()          # storage pointers of the tensors on the simulated device
        self.context: list[bool] = []      # the device of the Python-level calls in progress
        self.ops = 0
        self.device_ops = 0                # operations that run on the simulated device (launches, on a GPU)
        self.host_reads = 0                # values read back from the device to the host (.item(), bool(), .cpu()...)

    def holds(self, t: torch.Tensor) -> bool:
        return _ptr(t) in self.on

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        self.ops += 1
        name = func.overloadpacket.__name__
        tensors = _tensors((args, kwargs))
        if name == "_local_scalar_dense" and self.holds(args[0]):        # .item(), bool(t), float(t): a host sync
            self.host_reads += 1
        if "device" in kwargs and kwargs["device"] is not None:          # a factory operation
            on = _is_simulated(kwargs["device"])
            if on:
                kwargs["device"] = torch.device("cpu")
            elif self.context:                                           # created by a kernel from self.options()
                on = self.context[-1]
        else:
            checked = [t for t in tensors if t.dim() > 0]
            if name == "copy_":                                          # copies cross devices
                checked = []
            elif name in _INDEXING and self.holds(args[0]):
                checked = [args[0]] + [t for t in tensors[1:] if t.dim() > 0 and t.dtype not in _INDEX_DTYPES]
            sides = {self.holds(t) for t in checked}
            if len(sides) > 1:
                where = ", ".join(f"{tuple(t.shape)} on {'the device' if self.holds(t) else 'the cpu'}"
                                  for t in checked)
                raise DeviceMismatch(f"{func} mixes devices: {where}")
            on = self.holds(args[0]) if name == "copy_" else any(self.holds(t) for t in tensors)
        out = func(*args, **kwargs)
        self.device_ops += bool(on)
        for t in _tensors(out):
            (self.on.add if on else self.on.discard)(_ptr(t))
        return out


class _Function(TorchFunctionMode):
    def __init__(self, dispatch: _Dispatch) -> None:
        super().__init__()
        self.d = dispatch

    def _to(self, func, args, kwargs):
        """Tensor.to / Tensor.cpu, whose no-op on a real CPU tensor would keep the tag."""
        self_t, rest = args[0], args[1:]
        target = kwargs.get("device")
        for a in rest:
            if isinstance(a, torch.Tensor):
                target, kwargs = (SIMULATED if self.d.holds(a) else "cpu"), {**kwargs, "dtype": a.dtype}
                rest = ()
            elif isinstance(a, str | torch.device):
                target = a
        if func is torch.Tensor.cpu:
            target = "cpu"
        if _is_simulated(target) is False and self.d.holds(self_t):
            self.d.host_reads += 1
            out = func(self_t, *rest, **kwargs)
            if _ptr(out) == _ptr(self_t):
                out = out.clone()
            self.d.on.discard(_ptr(out))
            return out
        if _is_simulated(target) and target is SIMULATED and rest == ():      # .to(tensor on the device)
            return func(self_t, **{k: v for k, v in kwargs.items() if k != "device"}).to(SIMULATED)
        return func(self_t, *rest, **kwargs)              # (rest is empty where a tensor named the target)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func == torch.Tensor.device.__get__:
            return SIMULATED if self.d.holds(args[0]) else func(*args)
        if func is torch.Tensor.tolist and self.d.holds(args[0]):
            self.d.host_reads += 1
            return func(*args, **kwargs)
        if func is torch.Tensor.numpy and self.d.holds(args[0]):
            raise DeviceMismatch("numpy() of a tensor on the device: call .cpu() first")
        if func in (torch.Tensor.to, torch.Tensor.cpu):
            return self._to(func, args, kwargs)
        if func in (torch.tensor, torch.as_tensor) and _is_simulated(kwargs.get("device")):
            return func(*args, **{**kwargs, "device": "cpu"}).to(SIMULATED)
        named = _is_simulated(kwargs.get("device"))
        on = named if named is not None else any(self.d.holds(t) for t in _tensors((args, kwargs)))
        self.d.context.append(on)
        try:
            return func(*args, **kwargs)
        finally:
            self.d.context.pop()


@contextlib.contextmanager
def simulated_device() -> Iterator[_Dispatch]:
    """Run the block with ``device="meta"`` simulated on the CPU (see the module docstring)."""
    dispatch = _Dispatch()
    parse_to = torch._C._nn._parse_to

    def parse_to_simulated(*args, **kwargs):     # Module.to(tensor) reads the tensor's device in C++
        if args and isinstance(args[0], torch.Tensor):
            args = (args[0].device, args[0].dtype, *args[1:])
        return parse_to(*args, **kwargs)

    torch._C._nn._parse_to = parse_to_simulated
    try:
        with _Function(dispatch), dispatch:
            yield dispatch
    finally:
        torch._C._nn._parse_to = parse_to
