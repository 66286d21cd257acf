"""Large learning rates and the edge of stability (Jacot et al. Sec. 5.2, after Cohen et al. 2021): full-batch
gradient descent on the regularised square loss, with the top eigenvalue of the loss Hessian ("sharpness")
measured along the way by power iteration on Hessian-vector products. The loss is summed over the samples, as in
Jacot et al.'s theorems (the convention is stated once, in :mod:`ncbook.train`). Both GD loops run on
:func:`ncbook.train.run_steps` and, given a checkpoint path, resume a killed run to the identical result."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from .bounds import top_hessian_eigenvalue
from .nets import MLP
from .train import (
    DivergenceWatch,
    load_checkpoint,
    one_hot_targets,
    run_steps,
    save_checkpoint,
    square_loss,
    weight_penalty,
)


def regularised_loss(model: MLP, params: list[torch.Tensor], X: torch.Tensor, Y: torch.Tensor,
                     weight_decay: float) -> torch.Tensor:
    """C_lambda(theta) = ||Z_L - Y||_F^2 / 2 + lambda ||theta||^2 / 2 (Jacot et al. Sec. 4; summed, not averaged),
    with the network's weights replaced by ``params`` (a functional forward, for Hessian-vector products)."""
    h = X
    for i, W in enumerate(params):
        h = h @ W.T
        if i < model.num_nonlinear:
            h = model.activation(h)
    return square_loss(h, Y, "sum") + weight_penalty(params, weight_decay)


def _gd_start(model: MLP, X: torch.Tensor, labels: torch.Tensor, lr: float, weight_decay: float,
              dtype: torch.dtype = torch.float64):
    """Checked settings, inputs and one-hot targets in ``dtype``, and the model's weights as leaf tensors of it."""
    if not lr > 0 or not weight_decay >= 0:
        raise ValueError(f"need lr > 0 and weight_decay >= 0, got lr={lr}, weight_decay={weight_decay}")
    Y = one_hot_targets(labels, model.weights[-1].shape[0], dtype).to(X.device)
    params = [W.detach().to(dtype).clone().requires_grad_(True) for W in model.weights]
    return X.to(dtype), Y, params


def _resume(checkpoint: Path | None, state: dict) -> int:
    """Overwrite ``state`` with the checkpoint's, if there is one; return the step to start from."""
    saved = load_checkpoint(checkpoint)
    if saved is None:
        return 0
    state.update({k: v for k, v in saved.items() if k != "step"})
    state["params"] = [W.to(state["device"]).requires_grad_(True) for W in saved["params"]]
    return int(saved["step"])


_NOT_SAVED = ("device", "loss_tensor", "grads", "D", "params")
"""Entries of a GD loop's state that a checkpoint leaves out (recomputed at the first step after resuming)."""


def _after(first: Callable[[], None], save: Callable[[int], None] | None) -> Callable[[int], None] | None:
    """``save``, run after ``first`` (None where ``save`` is)."""
    if save is None:
        return None

    def both(k: int) -> None:
        first()
        save(k)
    return both


def _saver(checkpoint: Path | None, state: dict):
    """The ``save`` of :func:`ncbook.train.run_steps` for a GD loop's ``state``: weights and records."""
    if checkpoint is None:
        return None
    return lambda step: save_checkpoint(checkpoint, {k: v for k, v in state.items() if k not in _NOT_SAVED}
                                        | {"step": step, "params": [W.detach() for W in state["params"]]})


def gd_with_sharpness(model: MLP, X: torch.Tensor, labels: torch.Tensor, lr: float, weight_decay: float,
                      steps: int, every: int = 100, power_iters: int = 30, progress: bool = True,
                      checkpoint: Path | None = None, save_every: int = 500,
                      dtype: torch.dtype = torch.float64) -> dict:
    """Run ``steps`` of GD theta <- theta - lr grad C_lambda from the model's weights (bias-free) in ``dtype``,
    recording the loss every step and the sharpness every ``every`` steps. Returns arrays and the final weights."""
    Xd, Y, params = _gd_start(model, X, labels, lr, weight_decay, dtype)
    st = {"params": params, "device": Xd.device, "loss": [], "sharp_steps": [], "sharpness": []}
    start = _resume(checkpoint, st)
    watch = DivergenceWatch(lambda k: lr)
    pending: list[torch.Tensor] = []                        # the losses not yet read back, on the device

    def read_back() -> None:
        """Stop a diverged run, then move the pending losses to the record (one read)."""
        watch.check()
        if pending:
            st["loss"].extend(torch.stack(pending).tolist())
            pending.clear()

    def measure(k: int) -> None:
        loss = regularised_loss(model, st["params"], Xd, Y, weight_decay)
        if watch.initial is None:
            watch.start(torch.tensor(st["loss"][0], dtype=loss.dtype, device=loss.device) if st["loss"] else loss)
        watch.see(loss, k)
        pending.append(loss.detach())
        st["loss_tensor"] = loss
        if k % every == 0:
            read_back()
            st["sharp_steps"].append(k)
            st["sharpness"].append(top_hessian_eigenvalue(
                lambda ps: regularised_loss(model, ps, Xd, Y, weight_decay), st["params"], iters=power_iters, seed=k))

    def update(k: int) -> None:
        grads = torch.autograd.grad(st["loss_tensor"], st["params"])
        with torch.no_grad():
            for W, g in zip(st["params"], grads):
                W -= lr * g

    saver = _saver(checkpoint, st)
    run_steps(steps, update, measure, start=start,
              save=_after(read_back, saver),
              save_every=save_every, progress=progress, desc=f"GD, lr {lr:g}")
    read_back()
    return {"loss": np.array(st["loss"]), "steps": np.array(st["sharp_steps"]),
            "sharpness": np.array(st["sharpness"]), "weights": [W.detach() for W in st["params"]]}


def gd_phases(model: MLP, X: torch.Tensor, labels: torch.Tensor, lr: float, weight_decay: float, steps: int,
              every: int = 10, progress: bool = True, checkpoint: Path | None = None,
              save_every: int = 500) -> dict[str, np.ndarray]:
    """GD on C_lambda (Jacot et al. Sec. 4) from the model's weights, recording every ``every`` steps the
    regularised and unregularised losses, ||grad C_0||^2, the balancedness ||W_{l+1}^T W_{l+1} - W_l W_l^T||_op of
    each pair of linear layers, and the largest residual of the one-step recursion of chapter 6,
    D_{k+1} = (1 - lr lambda)^2 D_k + lr^2 (G_{l+1}^T G_{l+1} - G_l G_l^T)."""
    Xd, Y, params = _gd_start(model, X, labels, lr, weight_decay)
    L1, L = model.num_nonlinear, len(params)
    pairs = range(L1, L - 1)
    st = {"params": params, "device": Xd.device, "recorded": [], "loss": [], "loss0": [], "grad0_sq": [], "balance": [],
          "worst": 0.0}
    start = _resume(checkpoint, st)
    watch = DivergenceWatch(lambda k: lr)

    def measure(k: int) -> None:
        P = st["params"]
        loss0 = regularised_loss(model, P, Xd, Y, 0.0)
        loss = loss0 + weight_penalty(P, weight_decay)
        if watch.initial is None:
            watch.start(torch.tensor(st["loss"][0], dtype=loss.dtype, device=loss.device) if st["loss"] else loss)
        watch.see(loss, k)
        st["grads"] = g0 = torch.autograd.grad(loss0, P)                # data-loss gradients G_l
        if k % every == 0:
            watch.check()
            st["D"] = [(P[i + 1].T @ P[i + 1] - P[i] @ P[i].T).detach() for i in pairs]
            st["recorded"].append(k)
            st["loss"].append(float(loss.detach()))
            st["loss0"].append(float(loss0.detach()))
            st["grad0_sq"].append(float(sum((g * g).sum() for g in g0)))
            st["balance"].append([float(torch.linalg.matrix_norm(d, ord=2)) for d in st["D"]])

    def update(k: int) -> None:
        P, g0 = st["params"], st["grads"]
        with torch.no_grad():
            new = [W - lr * (g + weight_decay * W) for W, g in zip(P, g0)]
            for j, i in enumerate(pairs if k % every == 0 else ()):    # the recursion, checked at recorded steps
                predicted = ((1 - lr * weight_decay) ** 2 * st["D"][j]
                             + lr ** 2 * (g0[i + 1].T @ g0[i + 1] - g0[i] @ g0[i].T))
                actual = new[i + 1].T @ new[i + 1] - new[i] @ new[i].T
                st["worst"] = max(st["worst"], float((actual - predicted).abs().max() / (1 + actual.abs().max())))
        st["params"] = [W.requires_grad_(True) for W in new]

    saver = _saver(checkpoint, st)
    run_steps(steps, update, measure, start=start,
              save=_after(watch.check, saver),
              save_every=save_every, progress=progress, desc=f"GD, lr {lr:g}, λ {weight_decay:g}")
    watch.check()
    out = {k: np.array(st[k], dtype=np.float64) for k in ("loss", "loss0", "grad0_sq", "balance")}
    out["step"] = np.array(st["recorded"], dtype=np.float64)
    out["recursion_residual"] = np.array(st["worst"])
    return out


def sharpness_against_edge(eos: dict[str, np.ndarray], last: int = 1000) -> dict[str, np.ndarray]:
    """An ``edge_of_stability`` result read against 2/eta (Cohen et al. 2021), per learning rate: the sharpness at
    step 0, and the sharpness over 2/eta at the measurements of the last ``last`` steps (median, min, max)."""
    late = eos["sharpness_steps"] >= eos["sharpness_steps"][-1] - last
    ratios = eos["sharpness"][:, late] * eos["lrs"][:, None] / 2
    return {"lrs": eos["lrs"], "edge": 2 / eos["lrs"], "start": eos["sharpness"][:, 0],
            "median": np.median(ratios, axis=1), "min": ratios.min(axis=1), "max": ratios.max(axis=1)}
