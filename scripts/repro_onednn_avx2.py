"""The smallest case of issue 72: oneDNN's AVX2 weight gradient of a strided 1x1 convolution on channels-last input
writes outside its buffer (torch 2.14.1, its bundled oneDNN; no ncbook code involved).

    ONEDNN_MAX_CPU_ISA=AVX2 python scripts/repro_onednn_avx2.py channels_last    # heap corruption: dies (SIGABRT)
    ONEDNN_MAX_CPU_ISA=AVX2 python scripts/repro_onednn_avx2.py channels_first   # the eager step's layout: "ok"

On a CPU with AVX2 and without AVX-512 (an AMD EPYC of the Zen 2/3 kind, Intel before Skylake-SP) oneDNN picks its
AVX2 kernels by itself; ``ONEDNN_MAX_CPU_ISA=AVX2`` makes an AVX-512 machine pick them too. The faulty kernel is
``jit_avx2_1x1_convolution_bwd_weights`` (``ONEDNN_VERBOSE=1`` names it: ``jit_1x1:avx2,backward_weights``, src
``acdb``); valgrind reports an invalid write of size 8 inside it. Measured on an AMD EPYC (Zen 4) with
``ONEDNN_MAX_CPU_ISA=AVX2`` (docs/details.md, "The captured step"): it fails for stride 2, channels-last, 1 to 6
input channels (fewer than AVX2's 8 floats) and any batch of 2 or more; stride 1, channels-first, 8 or more input
channels, a 3x3 kernel, or oneDNN's AVX-512, AVX or SSE4.1 kernels give no error. A ResNet's shortcut from 4 to 8
channels is this case, and TorchInductor makes every CPU convolution channels-last, so the captured step hit it;
``ncbook.train.CPU_COMPILE_OPTIONS`` turns that layout change off. glibc notices the corruption when the buffer is
freed; ``LD_PRELOAD=libc_malloc_debug.so.0 MALLOC_CHECK_=3`` makes that immediate.
"""

from __future__ import annotations

import sys

import torch


def weight_gradient(channels_last: bool, batch: int = 10, steps: int = 20) -> torch.Tensor:
    """The weight gradient of a 1x1, stride-2 convolution from 4 to 8 channels on 8x8 images, ``steps`` times."""
    layout = torch.channels_last if channels_last else torch.contiguous_format
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, 4, 8, 8, generator=gen).to(memory_format=layout)
    w = torch.randn(8, 4, 1, 1, generator=gen).to(memory_format=layout)
    grad_out = torch.randn(batch, 8, 4, 4, generator=gen).to(memory_format=layout)
    for _ in range(steps):
        _, grad_w, _ = torch.ops.aten.convolution_backward(grad_out, x, w, None, [2, 2], [0, 0], [1, 1], False,
                                                           [0, 0], 1, [False, True, False])
    return grad_w


if __name__ == "__main__":
    layouts = {"channels_last": True, "channels_first": False}
    if len(sys.argv) != 2 or sys.argv[1] not in layouts:
        raise SystemExit(f"usage: python {sys.argv[0]} channels_last|channels_first")
    grad = weight_gradient(layouts[sys.argv[1]])
    print(f"ok: torch {torch.__version__}, the weight gradient's norm {float(grad.norm()):.4g}")
