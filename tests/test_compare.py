"""ncbook.compare: the readers of stored results pick the right entries."""

import numpy as np
import pytest

from ncbook import compare, reproduce
from ncbook.nets import mlp_layer_names, padded_layer_names


def test_claim_helpers_read_the_right_entries():
    """Table 1 from a synthetic result: mean/sd over seeds at the last record of the deepest features, and the
    deviations from the baseline in the order of ABLATIONS[1:]."""

    rng = np.random.default_rng(0)
    nc1 = rng.random((2, 3, 5, 4, 3))              # [loss, seed, setting, record, layer]
    nc1[..., -1, -2] = np.arange(5)[None, None, :] + np.array([0.0, 1.0, 2.0])[None, :, None]
    names = np.array(["hidden 1", "hidden 2", "output"])
    table = compare.ablation_table({"nc1_pinv": nc1, "nc2_etf_distance": nc1, "layer_names": names})
    assert np.allclose(table["NC1"], np.arange(5) + 1.0) and np.allclose(table["NC1_sd"], np.std([0, 1, 2]))
    assert np.allclose(compare.deviation_from_baseline(table, "NC1"), [[1, 2, 3, 4]] * 2)
    m = rng.random((2, 3, 5, 4, 7))               # [depth, seed, weight decay, record, layer]
    names = padded_layer_names([["backbone", "hidden 1", "linear 1", "linear 2", "linear 3", "output"],
                                  ["backbone", "hidden 1", "linear 1", "linear 2", "linear 3", "linear 4", "output"]])
    values = compare.head_values({"depths": np.array([4, 5]), "layer_names": names, "m": m}, "m")
    assert values["last"].shape == (2, 3, 5) and np.allclose(values["last"][1], m[1, :, :, -1, 5])
    assert np.allclose(values["first"][0], m[0, :, :, -1, 1])
    sweep = {"depths": np.array([1, 2, 3]), "layer_names": padded_layer_names(
        [mlp_layer_names(5 + d, 5) for d in (1, 2, 3)])}
    ends = compare.head_ends(sweep)
    assert ends["last"].tolist() == [4, 5, 6] and ends["first"].tolist() == [4, 4, 4]
    with pytest.raises(ValueError, match="pass depth="):
        compare.layer_index(sweep, "deepest")
    assert len(compare.TIRER_TABLE1) == 4 and all(len(v["NC1"]) == len(reproduce.ABLATIONS)
                                                   for v in compare.TIRER_TABLE1.values())


def test_feature_decay_verdicts_are_per_seed_and_can_fail():
    """Seed 2 has the last layer's change move NC1 more (doubling): its verdict is False, the others True; a seed
    mean that hid it would not."""
    nc1 = np.zeros((1, 3, 5, 1, 2))
    nc1[0, :, :, -1, 0] = [[1.0, 1.1, 1.5, 1.2, 2.0], [1.0, 1.1, 1.5, 1.2, 2.0], [1.0, 1.9, 1.2, 1.2, 2.0]]
    result = {"nc1_pinv": nc1, "nc2_etf_distance": nc1.copy(), "layer_names": np.array(["hidden 1", "output"])}
    v = compare.feature_decay_verdicts(result, ("mse",), layer="hidden 1")
    assert v[("mse", "NC1", "doubling")].tolist() == [True, True, False]
    assert v[("mse", "NC2", "zeroing")].tolist() == [True, True, True]
    assert np.abs(nc1[0, :, 2, -1, 0] - 1).mean() > np.abs(nc1[0, :, 1, -1, 0] - 1).mean()   # the mean says True


def test_tirer_table1_has_both_data_sets_with_sds():
    assert set(compare.TIRER_TABLE1) == {"CIFAR-10, MSE", "CIFAR-10, CE", "MNIST, MSE", "MNIST, CE"}
    for column in compare.TIRER_TABLE1.values():
        assert set(column) == {"NC1", "NC1_sd", "NC2", "NC2_sd"} and all(len(v) == 5 for v in column.values())


def test_layers_are_read_by_name_or_role():
    """The same role names a different position in an MLP result and a ResNet18 result; a missing name says which
    layers there are."""
    mlp = {"layer_names": np.array(["hidden 1", "hidden 2", "hidden 3", "output"]), "m": np.arange(8.0).reshape(2, 4)}
    resnet = {"layer_names": np.array(["res block 3", "res block 4", "output"]), "m": np.arange(6.0).reshape(2, 3)}
    assert [compare.layer_index(mlp, r) for r in ("deepest", "intermediate", "hidden 1")] == [2, 1, 0]
    assert [compare.layer_index(resnet, r) for r in ("deepest", "intermediate", "output")] == [1, 0, 2]
    assert compare.final_at(mlp, "m", "deepest").tolist() == 6.0 and compare.final_at(resnet, "m", "intermediate") == 3
    jacot = {"layer_names": np.array(mlp_layer_names(9, 5))}          # 5 ReLU, 3 linear, the output
    assert [compare.layer_index(jacot, r) for r in ("head input", "deepest", "linear 1")] == [4, 7, 5]
    assert compare.layers_of(jacot, "linear") == [5, 6, 7] and compare.layers_of(jacot, "hidden")[-1] == 4
    assert compare.relu_pairs(jacot, "hidden 3") == [2, 3]            # (hidden 3, hidden 4), (hidden 4, hidden 5)
    with pytest.raises(ValueError, match="its layers are"):
        compare.layer_index(resnet, "hidden 2")
    with pytest.raises(ValueError, match="intermediate"):
        compare.layer_index({"layer_names": np.array(["hidden 1", "output"])}, "intermediate")


def test_ablation_regimes_count_the_runs_at_zero_error_and_the_distance_from_table_1():
    """Issue 60's ledger of Tirer et al.'s ablation: (seed, setting) runs at zero training error at the end (one
    misclassified sample anywhere takes a run out) and the baseline's NC1 at the deepest features over Table 1's."""
    names = np.array(["hidden 1", "hidden 2", "output"])
    nc1 = np.full((2, 3, 5, 4, 3), 9.0)
    nc1[0, :, 0, -1, 1] = [0.0016, 0.0008, 0.0024]                 # MSE baseline: mean 0.0016, twice Table 1's 8e-4
    nc1[1, :, 0, -1, 1] = 0.4                                       # CE baseline: 100 times Table 1's 0.004
    err = np.zeros((2, 3, 5, 4))
    err[0, 1, 3, -1] = 0.0002                                       # one MSE run ends one digit short
    err[1, :, :, -2] = 0.5                                          # CE runs that fitted only at the last record
    r = {"nc1_pinv": nc1, "train_error": err, "layer_names": names}
    mse, ce = compare.ablation_regimes({"a": (r, ("mse", "ce"), ("mse", "ce"))})
    assert (mse.at_zero, mse.runs, ce.at_zero, ce.runs) == (14, 15, 15, 15)
    assert mse.times == pytest.approx(2.0) and ce.times == pytest.approx(100.0)
    (only,) = compare.ablation_regimes({"b": (r, ("mse", "ce"), ("ce",))})
    assert only.loss == "ce" and only.nc1 == pytest.approx(0.4)
    cells = compare.RegimeTable([mse, ce]).cells
    assert cells(mse)[2:] == ["14 of 15", "0.0016", "2.0x"] and cells(ce)[4] == "100x"


def test_fig3s_five_seed_sentence_retrains_the_network_that_diverges(monkeypatch):
    """Issue 74, point 5: Fig. 3's page says why it has three seeds, not the paper's five, from the network that
    diverges retrained (compare.FIG3_DIVERGES), read here independently from the trainer's own error; where that
    network trains, the sentence says the five seeds can be run; where the sweep has five, it says so."""
    from dataclasses import replace

    from ncbook.registry import get_experiment

    exp = get_experiment("jacot_nonlinear_depth")
    with pytest.raises(FloatingPointError) as err:
        exp.run(replace(exp.config("cpu"), **compare.FIG3_DIVERGES), progress=False)
    step = int(str(err.value).split("loss at step ")[1].split()[0])
    text = compare.fig3_five_seeds("cpu", (0, 1, 2))
    mantissa, exponent = f"{float(str(err.value).split(' is ')[1].split()[0]):.1e}".split("e")
    power = "".join("⁰¹²³⁴⁵⁶⁷⁸⁹"[int(c)] for c in str(int(exponent)))
    assert f"diverges (retrained alone here: at step {step} its loss is {mantissa} × 10{power} times its first)" in text
    assert "seeds 0, 1, 2, not" in text and "`" not in text          # glued text is plain: no code markup
    assert "Our learning rates are 5 times the paper's" in text
    monkeypatch.setattr(compare, "divergence", lambda *args, **kwargs: None)
    assert "now trains: the five seeds can be run" in compare.fig3_five_seeds("cpu", (0, 1, 2))
    assert compare.fig3_five_seeds("cpu", (0, 1, 2, 3, 4)).startswith("The sweep has the paper's five runs")
