"""`veracity verifier compare A B`: two trained verifiers' held-apart figures side by side."""

import json

from veracity.cli import main


def fig(f1: float, ece: float, n: int = 100, top20: float = 90.0) -> dict:
    return {"macro_f1": f1, "accuracy": f1, "top20_accuracy": top20, "ece": ece, "n": n}


def folder(tmp_path, name: str, chosen: str, figures: dict, seed: int = 31):
    out = tmp_path / name
    out.mkdir()
    (out / "verifier.json").write_text(
        json.dumps({"name": name, "chosen": chosen, "figures": figures, "calibrated_with": {"seed": seed}})
    )
    return out


def test_the_candidate_is_set_against_the_verifier_to_beat_per_set_and_in_all(tmp_path, capsys):
    a = folder(
        tmp_path,
        "shipped",
        "cross_encoder",
        {
            "cross_encoder": {"fm2": fig(68.1, 0.018), "check_covid": fig(62.6, 0.059, 227), "snli": fig(75.0, 0.03)},
            "stacked": {"fm2": fig(60.0, 0.1)},
        },
    )
    b = folder(
        tmp_path,
        "candidate",
        "stacked",
        {
            "cross_encoder": {"fm2": fig(99.0, 0.01)},
            "stacked": {
                "fm2": fig(70.4, 0.02),
                "check_covid": fig(60.3, 0.04, 230),
                "snli": fig(75.0, 0.07),
                "summedits": fig(50.0, 0.2),
            },
        },
    )
    assert main(["verifier", "compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    # each side's shipped decision: the cross-encoder of A, the stacker of B
    assert f"A: {a} (cross_encoder)" in out and f"B: {b} (stacked)" in out
    assert "| fm2 | 100 | 68.1 | 70.4 | +2.3 | 90.0 | 90.0 | 0.018 | 0.020 |" in out
    assert "| check_covid | 227 / 230 | 62.6 | 60.3 | -2.3 |" in out
    assert "mean macro-F1 over 3 sets: A 68.57, B 68.57 (+0.00); B better on 1, worse on 1" in out
    assert "ECE at most 0.05: A on 2, B on 2 of 3 sets" in out
    assert "not compared (measured on one side only): A none; B summedits" in out
    assert "different seeds" not in out

    assert main(["verifier", "compare", str(a), str(b), "--model", "cross_encoder"]) == 0
    out = capsys.readouterr().out
    assert "mean macro-F1 over 1 sets: A 68.10, B 99.00 (+30.90); B better on 1, worse on 0" in out
    assert "not compared (measured on one side only): A check_covid, snli; B none" in out


def test_a_folder_without_figures_is_refused_with_what_to_do(tmp_path, capsys):
    calibrated = folder(tmp_path, "a", "cross_encoder", {"cross_encoder": {"fm2": fig(68.0, 0.02)}})
    trained = tmp_path / "trained"
    trained.mkdir()
    (trained / "verifier.json").write_text(json.dumps({"name": "t"}))
    assert main(["verifier", "compare", str(calibrated), str(trained)]) != 0
    assert f"verifier calibrate --out {trained}" in capsys.readouterr().err
    assert main(["verifier", "compare", str(calibrated), str(tmp_path / "missing")]) != 0
    assert "no verifier.json" in capsys.readouterr().err
    assert main(["verifier", "compare", str(calibrated), str(calibrated), "--model", "stacked"]) != 0
    assert "no figures for 'stacked' (it has cross_encoder)" in capsys.readouterr().err


def test_one_folder_is_compared_with_the_shipped_verifier(tmp_path, capsys):
    from veracity.verify.model import WEIGHTS_DIR

    shipped = json.loads((WEIGHTS_DIR / "verifier.json").read_text())
    chosen = shipped["chosen"]
    some = sorted(shipped["figures"][chosen])[:2]
    b = folder(tmp_path, "b", chosen, {chosen: {s: fig(100.0, 0.0) for s in some}})
    assert main(["verifier", "compare", str(b)]) == 0
    out = capsys.readouterr().out
    assert f"A: the shipped verifier ({chosen})" in out
    assert "B better on 2, worse on 0" in out and f"| {some[0]} |" in out


def test_a_training_or_calibration_into_another_folder_ends_with_how_it_stands_against_the_shipped(tmp_path, capsys):
    from veracity.cli.verifier import _against_shipped
    from veracity.verify.model import WEIGHTS_DIR

    shipped = json.loads((WEIGHTS_DIR / "verifier.json").read_text())
    chosen = shipped["chosen"]
    name = sorted(shipped["figures"][chosen])[0]
    b = folder(tmp_path, "b", chosen, {chosen: {name: fig(0.0, 0.5)}})
    _against_shipped(b)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"A: the shipped verifier, B: {b} (`veracity verifier compare {b}` for each set)"
    calibrated = int(shipped["figures"][chosen][name]["ece"] <= 0.05)
    assert out[1].endswith("B better on 0, worse on 1")
    assert out[2] == f"ECE at most 0.05: A on {calibrated}, B on 0 of 1 sets"
    _against_shipped(WEIGHTS_DIR)  # into the package's own folder: nothing to set it against
    uncalibrated = tmp_path / "quick"
    uncalibrated.mkdir()
    (uncalibrated / "verifier.json").write_text("{}")
    _against_shipped(uncalibrated)  # a quick run without held-apart figures: nothing said, nothing raised
    assert capsys.readouterr().out == ""


def test_folders_calibrated_with_different_seeds_are_said_to_be_measured_partly_on_different_pairs(tmp_path, capsys):
    # a training run calibrates with its own seed: its capped and made held-apart sets are other draws
    a = folder(tmp_path, "a", "cross_encoder", {"cross_encoder": {"vitaminc_real": fig(56.4, 0.03, 1499)}}, seed=31)
    b = folder(tmp_path, "b", "cross_encoder", {"cross_encoder": {"vitaminc_real": fig(52.5, 0.04, 1499)}}, seed=53)
    assert main(["verifier", "compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "calibrated with different seeds (A 31, B 53)" in out
    assert "`veracity verifier calibrate --out COPY --seed 31`" in out
