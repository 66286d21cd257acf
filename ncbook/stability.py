"""Large learning rates and the edge of stability (Jacot et al. Sec. 5.2, after Cohen et al. 2021): full-batch
gradient descent on the regularised square loss, with the top eigenvalue of the loss Hessian ("sharpness")
measured along the way by power iteration on Hessian-vector products."""

from __future__ import annotations

import numpy as np
import torch

from .bounds import top_hessian_eigenvalue
from .nets import MLP
from .train import one_hot_targets, progress_bar


def regularised_loss(model: MLP, params: list[torch.Tensor], X: torch.Tensor, Y: torch.Tensor,
                     weight_decay: float) -> torch.Tensor:
    """C_lambda(theta) = ||Z_L - Y||_F^2 / 2 + lambda ||theta||^2 / 2 (Jacot et al. Sec. 4; summed, not averaged)."""
    h = X
    for i, W in enumerate(params):
        h = h @ W.T
        if i < model.num_nonlinear:
            h = model.activation(h)
    return 0.5 * ((h - Y) ** 2).sum() + 0.5 * weight_decay * sum((W * W).sum() for W in params)


def gd_with_sharpness(model: MLP, X: torch.Tensor, labels: torch.Tensor, lr: float, weight_decay: float,
                      steps: int, every: int = 100, power_iters: int = 30, progress: bool = True) -> dict:
    """Run ``steps`` of GD theta <- theta - lr grad C_lambda from the model's weights (float64, bias-free), recording
    the loss every step and the sharpness every ``every`` steps. Returns arrays and the final weights."""
    if not lr > 0 or not weight_decay >= 0:
        raise ValueError(f"need lr > 0 and weight_decay >= 0, got lr={lr}, weight_decay={weight_decay}")
    Xd = X.double()
    Y = one_hot_targets(labels, model.weights[-1].shape[0], torch.float64)
    params = [W.detach().double().clone().requires_grad_(True) for W in model.weights]
    losses, sharp_steps, sharpness = [], [], []
    for k in progress_bar(range(steps + 1), enabled=progress, desc=f"GD, lr {lr:g}"):
        if k % every == 0:
            sharp_steps.append(k)
            sharpness.append(top_hessian_eigenvalue(lambda ps: regularised_loss(model, ps, Xd, Y, weight_decay),
                                                    params, iters=power_iters, seed=k))
        loss = regularised_loss(model, params, Xd, Y, weight_decay)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"GD diverged at step {k} (loss {loss.item()}): lr {lr:g} is above 2/sharpness")
        losses.append(float(loss.detach()))
        if k == steps:
            break
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for W, g in zip(params, grads):
                W -= lr * g
    return {"loss": np.array(losses), "steps": np.array(sharp_steps), "sharpness": np.array(sharpness),
            "weights": [W.detach() for W in params]}


def gd_phases(model: MLP, X: torch.Tensor, labels: torch.Tensor, lr: float, weight_decay: float, steps: int,
              every: int = 10, progress: bool = True) -> dict[str, np.ndarray]:
    """GD on C_lambda (Jacot et al. Sec. 4) from the model's weights, recording every ``every`` steps the
    regularised and unregularised losses, ||grad C_0||^2, the balancedness ||W_{l+1}^T W_{l+1} - W_l W_l^T||_op of
    each pair of linear layers, and the largest residual of the one-step recursion of chapter 6,
    D_{k+1} = (1 - lr lambda)^2 D_k + lr^2 (G_{l+1}^T G_{l+1} - G_l G_l^T)."""
    Xd = X.double()
    Y = one_hot_targets(labels, model.weights[-1].shape[0], torch.float64)
    params = [W.detach().double().clone().requires_grad_(True) for W in model.weights]
    L1, L = model.num_nonlinear, len(params)
    rec: dict[str, list] = {"step": [], "loss": [], "loss0": [], "grad0_sq": [], "balance": [], "residual": []}
    worst = 0.0
    for k in progress_bar(range(steps + 1), enabled=progress, desc=f"GD, lr {lr:g}, λ {weight_decay:g}"):
        loss0 = regularised_loss(model, params, Xd, Y, 0.0)
        loss = loss0 + 0.5 * weight_decay * sum((W * W).sum() for W in params)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"GD diverged at step {k}: lower the learning rate {lr:g}")
        g0 = torch.autograd.grad(loss0, params)                      # data-loss gradients G_l
        check = k % every == 0
        if check:
            D = [(params[i + 1].T @ params[i + 1] - params[i] @ params[i].T).detach() for i in range(L1, L - 1)]
            rec["step"].append(k)
            rec["loss"].append(float(loss.detach()))
            rec["loss0"].append(float(loss0.detach()))
            rec["grad0_sq"].append(float(sum((g * g).sum() for g in g0)))
            rec["balance"].append([float(torch.linalg.matrix_norm(d, ord=2)) for d in D])
        if k == steps:
            break
        with torch.no_grad():
            new = [W - lr * (g + weight_decay * W) for W, g in zip(params, g0)]
            for j, i in enumerate(range(L1, L - 1) if check else ()):
                predicted = ((1 - lr * weight_decay) ** 2 * D[j]
                             + lr ** 2 * (g0[i + 1].T @ g0[i + 1] - g0[i] @ g0[i].T))
                actual = new[i + 1].T @ new[i + 1] - new[i] @ new[i].T
                worst = max(worst, float((actual - predicted).abs().max() / (1 + actual.abs().max())))
        params = [W.requires_grad_(True) for W in new]
    out = {k: np.array(v, dtype=np.float64) for k, v in rec.items() if k != "residual"}
    out["recursion_residual"] = np.array(worst)
    return out
