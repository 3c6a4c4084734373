"""The `veracity verifier` command: train, measure and try the evidence verifier.

    veracity verifier train [--data ../shared/training] [--out src/veracity/verify/weights] [--epochs 1] ...
    veracity verifier check "CLAIM" --evidence "PASSAGE" [--evidence ...] [--model DIR|lexical] [--json]
    veracity verifier info [--json]
    veracity verifier calibrate [--out DIR] [--seed 13] [--threads 1] [--max-length N]
    veracity verifier average FOLDER FOLDER [...] --out DIR [--seed 13] [--threads 1]
    veracity verifier compare A [B] [--model cross_encoder|stacked]

`train` is seeded and resumes after a kill, mid-epoch (a checkpoint every --checkpoint-every batches, run the
same command again); it reads only ../shared/training.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import UserError
from ..verify.training.settings import LONG_PAIRS_MODES, TrainSettings

MIN_LENGTH, MAX_LENGTH = 16, 512  # word pieces per pair: the shortest window that holds a claim, the base's positions


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verifier",
        help="the trained evidence verifier (train, calibrate, average, compare, check, info)",
        description="Train, inspect and try the evidence verifier that decides whether "
        "passages support, refute or do not settle a claim.",
    )
    commands = parser.add_subparsers(
        dest="verifier_command", metavar="{train,calibrate,average,compare,check,info}", required=True
    )

    t = commands.add_parser("train", help="train the verifier and the lexical baseline (seeded, resumable)")
    t.add_argument("--data", default=None, help="training data folder (default ../shared/training beside the project)")
    t.add_argument("--out", default=None, help="output folder (default: the package's verify/weights)")
    t.add_argument("--epochs", type=int, default=1)
    t.add_argument("--lr", type=float, default=5e-5)
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--max-length", type=int, default=128, help="word pieces per pair read in training (default 128)")
    t.add_argument("--frozen-layers", type=int, default=2, help="lowest encoder layers left as the base model has them")
    t.add_argument("--seed", type=int, default=13)
    t.add_argument("--limit", type=int, default=None, help="at most this many training pairs (a quick run)")
    t.add_argument(
        "--per-source",
        type=int,
        default=None,
        help="at most this many training pairs of each source (a draw where no source dominates)",
    )
    t.add_argument(
        "--same-subject",
        type=int,
        default=0,
        help="add up to this many pairs of a claim against a sentence on another point about its subject "
        "(nei; default none)",
    )
    t.add_argument(
        "--long-pairs",
        choices=LONG_PAIRS_MODES,
        default="cut",
        help="a pair longer than --max-length: cut there (default), or read in the window of its evidence "
        "that holds most of the claim, a supported or refuted one dropped (window) or kept cut "
        "(window-or-cut) when no one window holds what the whole evidence holds of the claim (as the "
        "pipelines read long passages)",
    )
    t.add_argument(
        "--calibration-seed",
        type=int,
        default=None,
        help="the seed of the calibration that ends the training, which draws the held-apart sets "
        "(default: the shipped verifier's, so that `veracity verifier compare` measures the two alike)",
    )
    t.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    t.add_argument("--init-from", default=None, help="continue from a trained verifier folder")
    t.add_argument(
        "--base",
        default=None,
        metavar="FOLDER",
        help="train from this Hugging Face encoder folder instead of the packaged all-MiniLM-L6-v2 (a "
        "larger encoder for a GPU, or an NLI cross-encoder, whose own head is kept); the output "
        "folder then holds the whole model",
    )
    t.add_argument("--device", default="auto", help="auto (a CUDA GPU when torch sees one, else the CPU), cpu, cuda")
    t.add_argument(
        "--checkpoint-every",
        type=int,
        default=200,
        help="batches between checkpoints: a stopped run goes on from the last one (default 200)",
    )
    t.set_defaults(func=cmd_train)

    k = commands.add_parser(
        "calibrate",
        help="refit the temperature, the stacker and the lexical baseline of a "
        "trained verifier folder, and measure it again (rewrites verifier.json, MODEL_CARD.md)",
    )
    k.add_argument("--data", default=None, help="training data folder (default ../shared/training)")
    k.add_argument("--out", default=None, help="the verifier folder (default: the package's verify/weights)")
    k.add_argument("--seed", type=int, default=13)
    k.add_argument("--threads", type=int, default=1)
    k.add_argument(
        "--max-length",
        type=int,
        default=None,
        help="word pieces the verifier reads per claim-passage pair, a longer passage read in windows of "
        f"it ({MIN_LENGTH}-{MAX_LENGTH}; default: as the folder reads, at first its training's length)",
    )
    k.set_defaults(func=cmd_calibrate)

    r = commands.add_parser(
        "calibrate-retrieved",
        help="fit the confidence and the uncertain threshold of verdicts on retrieved evidence: training-source "
        "claims searched in an index (default: the Wikipedia knowledge base) as checks search, read by the verifier, "
        "fitted on one half and measured on the other (prints a table; --write keeps it in verifier.json)",
    )
    r.add_argument("--data", default=None, help="training data folder (default ../shared/training)")
    r.add_argument("--out", default=None, help="the verifier folder (default: the package's verify/weights)")
    r.add_argument("--index", default="kb:wikipedia", help="where the claims are searched (default kb:wikipedia)")
    r.add_argument("--per-source", type=int, default=1500, help="claims per training source at most (default 1500)")
    r.add_argument(
        "--written",
        action="append",
        default=None,
        help="a JSONL file of written claims (claim, label, optional split) to fit on as well; of a file with splits "
        "only --written-split is read (default: benchmarks/data's kb_realworld_claims.jsonl and open_world_claims.jsonl)",
    )
    r.add_argument("--written-split", default="A", help="the split of the written claims fitted on (default A)")
    r.add_argument("--readings", default=None, help="a JSONL file keeping each claim's reading (read again if there)")
    r.add_argument("--write", action="store_true", help="write retrieved_rule into the folder's verifier.json")
    r.set_defaults(func=cmd_calibrate_retrieved)

    gr = commands.add_parser(
        "calibrate-grounding",
        help="fit the grounding rule (a sentence against whole documents, supported when some part supports it) on "
        "the calibration parts of BEGIN, SummEdits, Factcheck-GPT and Citation-Integrity's dev split, and measure it "
        "on their held-apart parts (prints a table; --write keeps it in verifier.json)",
    )
    gr.add_argument("--data", default=None, help="training data folder (default ../shared/training)")
    gr.add_argument("--out", default=None, help="the verifier folder (default: the package's verify/weights)")
    gr.add_argument("--part-tokens", type=int, default=None, help="word pieces a part holds at most (default 128)")
    gr.add_argument("--threads", type=int, default=2)
    gr.add_argument("--readings", default=None, help="a JSON file keeping each pair's reading (read again if there)")
    gr.add_argument("--write", action="store_true", help="write grounding_rule into the folder's verifier.json")
    gr.set_defaults(func=cmd_calibrate_grounding)

    a = commands.add_parser(
        "average",
        help="average trained verifiers' weights (a model soup) into a new folder, "
        "then calibrate it as `calibrate` does",
    )
    a.add_argument("folders", nargs="+", help="trained verifier folders (two or more)")
    a.add_argument("--out", required=True, help="the new verifier folder (the package's verify/weights to ship it)")
    a.add_argument("--data", default=None, help="training data folder (default ../shared/training)")
    a.add_argument("--seed", type=int, default=13, help="the calibration's seed")
    a.add_argument("--threads", type=int, default=1)
    a.set_defaults(func=cmd_average)

    m = commands.add_parser(
        "compare", help="two trained verifiers' held-apart figures side by side (ship B only when it beats A)"
    )
    m.add_argument(
        "folders",
        nargs="+",
        metavar="FOLDER",
        help="A B: the verifier to beat and the candidate; one folder: the shipped verifier is A",
    )
    m.add_argument(
        "--model",
        choices=("cross_encoder", "stacked"),
        default=None,
        help="compare this model's figures in both (default: the decision each ships)",
    )
    m.set_defaults(func=cmd_compare)

    c = commands.add_parser("check", help="verify a claim against passages given on the command line")
    c.add_argument("claim")
    c.add_argument("--evidence", action="append", required=True, help="a passage (repeat for several)")
    c.add_argument("--model", default="default", help="verifier folder, 'default' (shipped) or 'lexical'")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_check)

    i = commands.add_parser("info", help="a verifier's settings, hash and figures (default: the shipped one)")
    i.add_argument("folder", nargs="?", default=None, help="a trained verifier folder (default: the shipped one)")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_info)


def cmd_train(args: argparse.Namespace) -> int:
    from ..verify.model import WEIGHTS_DIR
    from ..verify.training.train import run

    out = Path(args.out) if args.out else WEIGHTS_DIR
    for name, lo in (
        ("epochs", 1),
        ("batch_size", 1),
        ("max_length", MIN_LENGTH),
        ("threads", 1),
        ("checkpoint_every", 1),
    ):
        if getattr(args, name) < lo:
            raise UserError(f"--{name.replace('_', '-')} must be at least {lo}")
    if args.max_length > MAX_LENGTH:
        raise UserError(f"--max-length must be at most {MAX_LENGTH} (the base model's positions)")
    if args.per_source is not None and args.per_source < 1:
        raise UserError("--per-source must be at least 1")
    if args.same_subject < 0:
        raise UserError("--same-subject must be at least 0")
    if args.base:
        from ..verify.training.loop import model_folder

        model_folder(args.base)  # (a wrong --base is told before the training data is read)
    data = _data_dir(args.data)  # (after the flags: a mistyped flag is told before a missing folder)
    s = TrainSettings(
        epochs=args.epochs,
        lr=args.lr,
        batch_size=args.batch_size,
        max_length=args.max_length,
        frozen_layers=args.frozen_layers,
        seed=args.seed,
        limit=args.limit,
        threads=args.threads,
        per_source=args.per_source,
        same_subject=args.same_subject,
        long_pairs=args.long_pairs,
        init_from=args.init_from,
        base=args.base,
        checkpoint_every=args.checkpoint_every,
        device=args.device,
        calibration_seed=_calibration_seed(args.calibration_seed),
    )
    result = run(data, out, s, progress=True)
    print(
        json.dumps({k: result[k] for k in ("sha256", "temperature", "binary_rule", "figures", "ms_per_pair")}, indent=1)
    )
    weights = json.loads((out / "verifier.json").read_text(encoding="utf-8"))["weights"]
    print(f"wrote {out / weights}, {out / 'verifier.json'}, {out / 'lexical.json'}")
    _against_shipped(out)
    return 0


def _calibration_seed(asked: int | None) -> int | None:
    """The seed a training's calibration draws its held-apart sets with: the one asked, else the shipped verifier's
    (None, the training's own seed, when the package carries no calibrated verifier)."""
    from ..verify.model import WEIGHTS_DIR
    from ..verify.training.compare import calibration_seed

    if asked is not None:
        return asked
    try:
        return calibration_seed(json.loads((WEIGHTS_DIR / "verifier.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def _against_shipped(out: Path) -> None:
    """After a training or calibration into another folder: its held-apart figures against the shipped verifier's,
    in two lines (`veracity verifier compare` gives the table)."""
    from ..verify.model import WEIGHTS_DIR
    from ..verify.training.compare import compare, summary

    if out.resolve() == WEIGHTS_DIR.resolve() or not (WEIGHTS_DIR / "verifier.json").is_file():
        return
    try:
        lines = summary(compare(WEIGHTS_DIR, out))
    except UserError:  # the shipped verifier, or this one, has no held-apart figures (an eval-limited quick run)
        return
    print(f"A: the shipped verifier, B: {out} (`veracity verifier compare {out}` for each set)", *lines, sep="\n")


def _data_dir(arg: str | None) -> Path:
    from ..verify.training.data import default_training_dir

    data = Path(arg) if arg else default_training_dir()
    if not (data / "fm2").is_dir():
        raise UserError(f"training data not found in {data} (pass --data DIR; see ../shared/training/README.md)")
    return data


def cmd_calibrate(args: argparse.Namespace) -> int:
    from ..verify.model import WEIGHTS_DIR
    from ..verify.training.calibration import calibrate

    out = Path(args.out) if args.out else WEIGHTS_DIR
    if not (out / "verifier.json").is_file():
        raise UserError(f"no trained verifier in {out} (no verifier.json)")
    written = json.loads((out / "verifier.json").read_text(encoding="utf-8"))
    read = args.max_length
    if read is not None and not MIN_LENGTH <= read <= MAX_LENGTH:
        raise UserError(f"--max-length must be between {MIN_LENGTH} and {MAX_LENGTH} (the base model's positions)")
    data = _data_dir(args.data)  # before the folder is rewritten: it is not to read a length it was not calibrated for
    if read is not None:  # what the weights read from now on; the calibration measures them reading it
        written["max_length"] = read
        (out / "verifier.json").write_text(json.dumps(written, indent=1) + "\n", encoding="utf-8")
    prior = written.get("settings", {})
    s = TrainSettings(
        **{
            **{k: v for k, v in prior.items() if k in TrainSettings.__dataclass_fields__},
            "seed": args.seed,
            "threads": args.threads,
        }
    )
    result = calibrate(out, data, s)
    print(json.dumps({k: result[k] for k in ("temperature", "binary_rule", "figures", "ms_per_pair")}, indent=1))
    _against_shipped(out)
    return 0


def cmd_calibrate_retrieved(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ..config import VerifierConfig
    from ..retrieval.sharded import open_index
    from ..verify import evidence_text, load_verifier, uncertain_threshold, verifier_settings
    from ..verify.model import WEIGHTS_DIR
    from ..verify.training import open_world as ow

    folder = Path(args.out) if args.out else WEIGHTS_DIR
    if not (folder / "verifier.json").is_file():
        raise UserError(f"no trained verifier in {folder} (no verifier.json)")
    top_k = VerifierConfig().top_k  # as the `verifier` pipeline searches
    readings = Path(args.readings) if args.readings else None
    if readings is not None and readings.is_file():
        rows = [json.loads(line) for line in readings.read_text(encoding="utf-8").splitlines() if line.strip()]
    else:
        claims = ow.open_world_claims(_data_dir(args.data), args.per_source)
        for path in args.written if args.written is not None else ow.default_written():
            claims += ow.written_claims(Path(path), args.written_split)
        retriever = open_index(args.index).retriever()
        verifier = load_verifier(str(folder))

        def search(claim: str) -> list[str]:
            return [evidence_text(e.text) for e in retriever.search(claim, k=top_k)]

        rows = ow.read_claims(verifier, search, claims, progress=lambda xs: tqdm(xs, unit="claim"))
        if readings is not None:
            readings.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    verifier_settings.cache_clear()  # the folder as it is now (a rule written earlier in this process included)
    result = ow.calibrate_retrieved(
        rows,
        shipped_rule=verifier_settings(str(folder)).get("binary_rule", "supported_vs_refuted"),
        shipped_threshold=uncertain_threshold(VerifierConfig(model=str(folder))),
    )
    print(ow.render(result))
    if args.write:
        ow.write_rule(folder, ow.rule_entry(result, args.index, top_k))
        print(f"written: retrieved_rule in {folder / 'verifier.json'}")
    return 0


def cmd_calibrate_grounding(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ..verify import load_verifier
    from ..verify.grounding import PART_TOKENS
    from ..verify.model import WEIGHTS_DIR
    from ..verify.training import grounding_fit as gf

    folder = Path(args.out) if args.out else WEIGHTS_DIR
    part_tokens = args.part_tokens or PART_TOKENS
    if not 16 <= part_tokens <= 512:
        raise UserError(f"--part-tokens must be between 16 and 512, not {part_tokens}")
    readings = Path(args.readings) if args.readings else None
    if readings is not None and readings.is_file():
        rows = json.loads(readings.read_text(encoding="utf-8"))
    else:
        pairs = gf.grounding_pairs(_data_dir(args.data))
        verifier = load_verifier(str(folder), threads=args.threads)
        rows = gf.read_pairs(verifier, pairs, part_tokens=part_tokens, progress=lambda xs: tqdm(xs, unit="pair"))
        if readings is not None:
            readings.write_text(json.dumps(rows), encoding="utf-8")
    result = gf.calibrate(rows, part_tokens=part_tokens)
    print(gf.render(result))
    if args.write:
        gf.write_rule(folder, gf.rule_entry(result), "grounding_rule")
        print(f"written: grounding_rule in {folder / 'verifier.json'}")
    return 0


def cmd_average(args: argparse.Namespace) -> int:
    from ..verify.training.average import average

    if args.threads < 1:
        raise UserError("--threads must be at least 1")
    data = _data_dir(args.data)  # before writing anything: the averaged weights are not usable uncalibrated
    average([Path(f) for f in args.folders], Path(args.out))
    return cmd_calibrate(
        argparse.Namespace(out=args.out, data=str(data), seed=args.seed, threads=args.threads, max_length=None)
    )


def cmd_compare(args: argparse.Namespace) -> int:
    from ..verify.model import WEIGHTS_DIR
    from ..verify.training.compare import compare, render

    if len(args.folders) > 2:
        raise UserError("give two verifier folders (A, the one to beat, then B), or one to compare with the shipped")
    a, b = ([WEIGHTS_DIR] if len(args.folders) == 1 else []) + [Path(f) for f in args.folders]
    label_a = "the shipped verifier" if len(args.folders) == 1 else str(a)
    print(render(compare(a, b, args.model), label_a, str(b)))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from ..config import Config
    from ..inputs import clean_claim_text
    from ..verify import load_lexical, load_verifier

    claim = clean_claim_text(args.claim, Config().max_claim_chars)
    verifier = load_lexical() if args.model == "lexical" else load_verifier(args.model)
    v = verifier.verify(claim, args.evidence)
    if args.json:
        print(json.dumps(v.to_dict() | {"per_passage": v.per_passage}, indent=1))
        return 0
    for k in ("supported", "refuted", "nei"):
        print(f"{k:>10}: {v.probabilities[k]:.3f}")
    which = "all passages together" if v.passage is None else f"passage {v.passage + 1}"
    print(f"decided by {which}: {v.label} ({v.confidence:.2f})")
    if v.conflict:
        from ..verify.conflict import describe

        print(f"in doubt: {describe(v.conflict)}")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from ..verify.model import WEIGHTS_DIR
    from ..verify.result import describe_rule, describe_several

    f = (Path(args.folder).expanduser() if args.folder else WEIGHTS_DIR) / "verifier.json"
    if not f.is_file():
        raise UserError(
            f"no trained verifier in {args.folder} (no verifier.json there)"
            if args.folder
            else "no trained verifier in this installation; build it with `veracity verifier train`"
        )
    data = json.loads(f.read_text(encoding="utf-8"))
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    print(f"{data['name']}  (sha256 {data['sha256'][:16]}...)\nbase: {data['base']}")
    print(
        f"temperature {data.get('temperature', 1.0)}, two-label rule "
        f"{describe_rule(data.get('binary_rule', 'supported_vs_refuted'))}, "
        f"max length {data['max_length']}"
    )
    print(f"supported against not supported: {describe_rule(data.get('not_supported_rule', 'supported_vs_rest'))}")
    grounding = data.get("grounding_rule")
    if grounding:
        print(
            f"grounding (a sentence against whole documents, parts of {grounding.get('part_tokens')} word pieces): "
            f"{describe_rule(grounding)}, uncertain below {grounding['uncertain_below']:.3f}"
        )
    print(
        f"several passages: the deciding reading tempered by {describe_several(data.get('aggregate_temperature', 1.0))}"
    )
    for model, sets in data.get("figures", {}).items():
        for name, fig in sets.items():
            print(
                f"{model:>14} {name:<14} macro-F1 {fig['macro_f1']:5.1f}  accuracy {fig['accuracy']:5.1f}  "
                f"ECE {fig['ece']:.3f}  (n={fig['n']})"
            )
    return 0
