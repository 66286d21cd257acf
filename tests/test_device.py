"""Every experiment honours ``device`` for every tensor (issue 20, item 8).

Without a GPU, :mod:`simdevice` simulates a second device on the CPU: a tensor on it is a CPU tensor with a tag,
and any operation that mixes it with a CPU tensor fails as it would on CUDA. Each experiment's tiny scale runs
with ``device="meta"`` under the simulation; for the quick ones the result must match a plain CPU run, since every
computation is the CPU's: the training bit for bit, the float64 metrics to 1e-12 (the simulation copies tensors
that a CPU run shares with numpy, and LAPACK's last bits depend on memory layout and alignment). The first tests
break the rules on purpose to show the simulation catches each kind of mistake, and lets through what CUDA allows.
With CUDA present, each tiny scale also runs on the GPU and gives arrays of the CPU run's names and shapes."""
import numpy as np
import pytest
import torch
from simdevice import DeviceMismatch, simulated_device

from ncbook import data, metrics, nets
from ncbook.registry import EXPERIMENTS

FAST = ["linear_head", "jacot_phases", "edge_of_stability", "trained_ntk", "tirer_layerwise"]


def test_simulation_catches_a_factory_call_without_device():
    with simulated_device(), pytest.raises(DeviceMismatch, match="mixes devices"):
        x = torch.ones(3, 4, device="meta")
        x @ torch.randn(4, 2)                     # drawn on the default device, not x's


def test_simulation_catches_a_module_left_on_the_cpu():
    with simulated_device(), pytest.raises(DeviceMismatch, match="addmm"):
        torch.nn.Linear(4, 2)(torch.ones(3, 4, device="meta"))


def test_simulation_catches_cpu_labels_indexed_on_the_device_and_numpy():
    with simulated_device():
        X, y = data.digits(device="meta")
        assert X.device == y.device == torch.device("meta")
        with pytest.raises(DeviceMismatch, match="index"):
            torch.arange(10)[y]                                   # CUDA refuses device indices into a CPU tensor
        with pytest.raises(DeviceMismatch, match="numpy"):
            X.numpy()
        assert X.cpu().numpy().shape == X.shape                  # .cpu() first is fine


def test_simulation_allows_what_cuda_allows():
    with simulated_device() as sim:
        x = torch.arange(12.0).reshape(3, 4).to("meta")
        x[torch.tensor([0, 2])] += torch.tensor(1.0)               # CPU indices and 0-dim CPU tensors mix freely
        head = nets.MLP([4, 3, 2], 1).to(x)                         # Module.to(tensor) follows the tensor
        out = head(x)
        onehot = torch.nn.functional.one_hot(torch.tensor([0, 1, 1], device="meta"), 2)   # made by a C++ kernel
        ((out - onehot) ** 2).sum().backward()
        torch.optim.SGD(head.parameters(), lr=0.1, momentum=0.9).step()
        assert all(sim.holds(p) and sim.holds(p.grad) for p in head.parameters())
        assert out.device == torch.device("meta") and out.detach().cpu().device == torch.device("cpu")


def _arrays(name: str, device: str) -> dict[str, np.ndarray]:
    e = EXPERIMENTS[name]
    return e.run(e.config("tiny"), device=device, progress=False)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_experiment_honours_device(name):
    with simulated_device():
        simulated = _arrays(name, "meta")
    if name in FAST:                          # the simulation computes on the CPU: the same numbers
        plain = _arrays(name, "cpu")
        assert simulated.keys() == plain.keys()
        for k in plain:
            if np.asarray(plain[k]).dtype.kind == "U":      # layer names
                np.testing.assert_array_equal(simulated[k], plain[k], err_msg=f"{name}: {k}")
            else:       # NC metrics: the numba kernel on the CPU, torch operations on a device (float32 rounding)
                rtol = 1e-6 if k.startswith("nc") else 1e-12
                np.testing.assert_allclose(simulated[k], plain[k], rtol=rtol, atol=0, err_msg=f"{name}: {k}")
        if "loss" in plain:
            np.testing.assert_array_equal(simulated["loss"], plain["loss"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_experiment_runs_on_cuda(name):
    gpu, cpu = _arrays(name, "cuda"), _arrays(name, "cpu")
    assert {k: np.shape(v) for k, v in gpu.items()} == {k: np.shape(v) for k, v in cpu.items()}


def _reads_per_step(trainer: str) -> float:
    """Host reads per optimisation step between records: runs of 20 and 40 steps that record only at their start
    and end, the difference over 20 steps, on the simulated device."""
    from ncbook.nets import MLP, BlockMLP, Ensemble
    from ncbook.train import TrainConfig, train, train_ensemble, train_module

    counts = []
    for steps in (20, 40):
        with simulated_device() as sim:
            X, y = data.digits(device="meta")
            X, y = X[:200], y[:200]
            torch.manual_seed(0)
            cfg = TrainConfig(steps=steps, lr=0.05, weight_decay=1e-3, momentum=0.9, record_every=steps,
                              batch_size=50 if trainer in ("minibatch", "module") else None)
            widths = [X.shape[1], 32, 32, 10]
            if trainer == "ensemble":
                ens = Ensemble([MLP(widths, 1).to("meta") for _ in range(2)])
                before = sim.host_reads
                train_ensemble(ens, X, y, [cfg, cfg], progress=False)
            elif trainer == "module":
                model = BlockMLP(X.shape[1], 32, 10).to("meta")
                before = sim.host_reads
                train_module(model, X, y, cfg, progress=False)
            else:
                model = MLP(widths, 1).to("meta")
                before = sim.host_reads
                train(model, X, y, cfg, progress=False)
            counts.append(sim.host_reads - before)
    return (counts[1] - counts[0]) / 20


TRAINERS = ["full batch", "minibatch", "ensemble", "module"]


@pytest.mark.parametrize("trainer", TRAINERS)
def test_the_training_loop_reads_nothing_back_between_records(trainer):
    """Issue 49, point 2: no step waits for the device (the divergence check stays there until a record)."""
    assert _reads_per_step(trainer) == 0


def test_host_reads_are_counted_even_inside_the_loops(monkeypatch):
    """The counter the test above relies on sees each kind of read, and sees them inside every loop: with the
    divergence watch read at every step, as the loops' old check was (issue 49), each step reads once."""
    with simulated_device() as sim:
        t = torch.ones(3, device="meta")
        t.sum().item(), bool(t.all()), float(t[0]), t.tolist(), t.cpu()
        assert sim.host_reads == 5
        (t * 2).sum()
        assert sim.host_reads == 5
    from ncbook.train import DivergenceWatch
    see = DivergenceWatch.see

    def see_and_read(watch, loss, step):
        see(watch, loss, step)
        watch.check()

    monkeypatch.setattr(DivergenceWatch, "see", see_and_read)
    for trainer in TRAINERS:
        assert _reads_per_step(trainer) == 1, trainer



def _suite_on_device(N: int, d: int = 512, K: int = 10) -> tuple[dict[str, float], dict[str, float], int, int]:
    """The metric suite (``metrics.nc_metrics``, NC3 included) on N samples on the CPU and on the simulated device,
    with the device operations and host reads of the device run beyond those of its pass (``class_stats``)."""
    g = torch.Generator().manual_seed(N)
    y = torch.arange(N) % K
    X = torch.randn(K, d, generator=g)[y] + 0.1 * torch.randn(N, d, generator=g)
    W = torch.randn(K, d, generator=g)
    here = metrics.nc_metrics(X, y, W, K)
    with simulated_device() as sim:
        Xd, yd, Wd = X.to("meta"), y.to("meta"), W.to("meta")
        ops, reads = sim.device_ops, sim.host_reads
        metrics.class_stats(Xd, yd, K, classifier=Wd)
        ops, reads = 2 * sim.device_ops - ops, 2 * sim.host_reads - reads     # minus the pass's, once more
        there = metrics.nc_metrics(Xd, yd, Wd, K)
        return here, there, sim.device_ops - ops, sim.host_reads - reads


def test_the_metric_suite_reads_its_statistics_back_once():
    """Issue 49, point 2: on a GPU every operation is a launch and every number read back a wait. Beyond its pass
    over the features (``class_stats``), the suite's metrics read only the K d statistics, brought to the host once:
    5 copies and the classifier's (at N = 50,000, d = 512: 155 launches and 19 reads after the pass before, 7 and
    6 now)."""
    here, there, ops, reads = _suite_on_device(50_000)
    assert here.keys() == there.keys()
    for k in here:
        assert there[k] == pytest.approx(here[k], rel=1e-5, abs=1e-9), k
    assert ops <= 7 and reads <= 6, (ops, reads)


def _pass_on_device(N: int, d: int = 512, K: int = 10) -> tuple[int, int]:
    """Device operations and host reads of ``class_stats`` (with a classifier) on N samples on the simulated device."""
    g = torch.Generator().manual_seed(N)
    y = torch.arange(N) % K
    X, W = torch.randn(N, d, generator=g), torch.randn(K, d, generator=g)
    with simulated_device() as sim:
        Xd, yd, Wd = X.to("meta"), y.to("meta"), W.to("meta")
        metrics.class_stats(Xd, yd, K, classifier=Wd)
        return sim.device_ops, sim.host_reads


def test_the_pass_of_the_metric_suite_launches_the_same_work_for_any_number_of_samples():
    """Issue 49, point 2: on a device, one pass over the features is one launch per step whatever N is (up to
    DEVICE_CHUNK_ELEMENTS numbers: N = 50,000, d = 512, the benchmark's size, in one), and the class scatters one
    batched product with no read back: 505 launches and 10 reads at N = 50,000 before (175 at 5,000), 141 and 9 at
    both now."""
    small, big = _pass_on_device(5_000), _pass_on_device(50_000)
    assert small == big, f"the pass's launches or reads grow with N: {small} at 5,000, {big} at 50,000"


def test_ncbook_leaves_torchs_precision_defaults():
    """docs/details.md: float32 products in full float32, convolutions in PyTorch's default TF32. No module of
    ncbook changes either, and neither does training (a tiny run of every experiment kind that trains an MLP)."""
    import importlib
    import pkgutil

    import ncbook
    from ncbook.registry import EXPERIMENTS

    for info in pkgutil.iter_modules(ncbook.__path__):
        if info.name not in ("interactive", "plotting", "__main__"):
            importlib.import_module(f"ncbook.{info.name}")
    EXPERIMENTS["linear_head"].run(EXPERIMENTS["linear_head"].config("tiny"), progress=False)
    assert torch.get_float32_matmul_precision() == "highest"
    assert not torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
