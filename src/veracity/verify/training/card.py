"""MODEL_CARD.md beside the weights, written from verifier.json: what the verifier is, the data and their
licences, the commands that rebuild it, its held-apart figures."""

from __future__ import annotations

from ..result import describe_rule, describe_several
from .compare import calibration_seed


def describe_cut(cut: dict[str, list[int]], max_length: int) -> str:
    """The pairs training cut at the maximum length, in words, for the model card."""
    total, n = sum(c for c, _ in cut.values()), sum(m for _, m in cut.values())
    most = ", ".join(f"{src} {100 * c / m:.0f}%" for src, (c, m) in cut.items() if c)
    return (
        f"{total:,} of the last training stage's {n:,} pairs ({100 * total / max(n, 1):.1f}%) were longer than "
        f"{max_length} and were cut, so their label may not hold for what was read" + (f" ({most})" if most else "")
    )


def describe_fitted(fitted: dict) -> str:
    """What `--long-pairs window` (or `window-or-cut`) did to the last training stage's long pairs, for the model
    card."""

    def listed(counts: dict) -> str:
        return ", ".join(f"{src} {n}" for src, n in sorted(counts.items(), key=lambda x: (-x[1], x[0])))

    windowed, dropped, kept = fitted.get("windowed", {}), fitted.get("dropped", {}), fitted.get("kept_cut", {})
    unsure, done = (kept, "kept cut") if kept else (dropped, "dropped")
    return (
        f"{sum(windowed.values()):,} longer pairs of the last training stage were read in the window of their "
        f"evidence that holds most of the claim ({listed(windowed) or 'none'}) and {sum(unsure.values()):,} "
        f"supported or refuted ones {done}, their claim's words found in no one window "
        f"({listed(unsure) or 'none'}; verify/training/long_pairs.py)"
    )


def draws(folders: list[dict]) -> str:
    """The model card's line on what each averaged folder's last training stage read."""
    return "; ".join(
        f"{a['folder']}: the average of ({draws(a['averaged_from'])})"
        if "averaged_from" in a
        else f"{a['folder']}: {a['data']['train_pairs']} pairs {a['data'].get('train_by_source', {})}"
        if "data" in a
        else f"{a['folder']}: not counted"
        for a in folders
    )


def build_commands(settings: dict, cmd: str) -> list[str]:
    """The commands that rebuild the weights: one training run, or earlier stages and their continuation.

    `stages` in verifier.json (written by hand when weights are continued from shipped ones) holds each earlier
    stage's whole command, the n-th writing /tmp/stage<n>; the last stage continues from the one before it."""
    seed = calibration_seed(settings)
    calibrate = f"veracity verifier calibrate --seed {seed}"
    stages = settings.get("stages")
    averaged = settings.get("averaged_from")
    if averaged:  # `veracity verifier average` over folders the stages (or the folders' own records) built
        made = stages or [f"(the verifier in {a['folder']}, sha256 {a['sha256'][:16]}...)" for a in averaged]
        return [*made, f"veracity verifier average {' '.join(a['folder'] for a in averaged)} --out DIR --seed {seed}"]
    if stages:
        return [*stages, f"{cmd} --init-from /tmp/stage{len(stages)}", calibrate]
    init = settings.get("settings", {}).get("init_from")
    if not init:
        return [cmd, calibrate]
    first = init.split(": ", 1)[1] if init.startswith("stage 1: ") else f"(the verifier in {init})"
    return [f"{first} --out /tmp/stage1", f"{cmd} --init-from /tmp/stage1", calibrate]


def model_card(settings: dict) -> str:
    """MODEL_CARD.md beside the weights: what it is, the data and their licences, how it was built, its figures."""
    fig = settings.get("figures", {})
    data = dict(settings.get("data") or {})
    cut = data.pop("cut_at_max_length", None)  # its own line under Maximum length, not among the sizes
    fitted = data.pop("fitted_to_windows", None)  # the same
    rows = []
    for name in dict.fromkeys(n for sets in fig.values() for n in sets):
        for model, sets in fig.items():
            if name in sets:
                f = sets[name]
                rows.append(
                    f"| {name} | {model} | {f['n']} | {f['macro_f1']:.1f} | {f['accuracy']:.1f} | "
                    f"{f.get('top20_accuracy', float('nan')):.1f} | {f['ece']:.3f} |"
                )
    s = settings.get("settings", {})
    trained_length = s.get("max_length", settings["max_length"])
    cmd = (
        f"veracity verifier train --epochs {s.get('epochs')} --lr {s.get('lr')} --batch-size {s.get('batch_size')} "
        f"--max-length {s.get('max_length')} --frozen-layers {s.get('frozen_layers')} --seed {s.get('seed')} "
        f"--threads {s.get('threads')}"
        + (f" --limit {s['limit']}" if s.get("limit") else "")
        + (f" --per-source {s['per_source']}" if s.get("per_source") else "")
        + (f" --same-subject {s['same_subject']}" if s.get("same_subject") else "")
        + (f" --long-pairs {s['long_pairs']}" if s.get("long_pairs", "cut") != "cut" else "")
        + (f" --base {s['base']}" if s.get("base") else "")
        + (
            f" --calibration-seed {s['calibration_seed']}"
            if s.get("calibration_seed") not in (None, s.get("seed"))
            else ""
        )
    )
    whole = "base_folder" in settings  # trained from another base (`--base`): the folder holds the whole model
    rule = settings.get("uncertain_rule") or {}
    uncertain = (
        f"- **Uncertain below:** {settings['uncertain_below']} -- chosen on the calibration part so that "
        f"the verdicts at or above it are right {100 * rule.get('target_accuracy', 0):.0f}% of the time "
        f"(there: {100 * rule.get('calibration_accuracy_decided', 0):.1f}% right, "
        f"{100 * rule.get('calibration_share_decided', 0):.1f}% of {rule.get('calibration_pairs')} pairs "
        "decided). Pipelines mark a verdict below it uncertain (`verifier.uncertain_below` overrides it)."
        if "uncertain_below" in settings
        else ""
    )
    averaged = settings.get("averaged_from")
    drawn = draws(averaged or [])
    if averaged:  # what each folder's training read is listed folder by folder, not as the first folder's
        data = {k: v for k, v in data.items() if k not in ("train_pairs", "train_by_source")}
    took = ["an average itself" if "averaged_from" in a else f"{a.get('train_seconds')} s" for a in averaged or []]
    on_gpu = str(settings.get("trained_on", "cpu")).startswith("cuda")  # (recorded since `--base`; before: the CPU)
    trained = (
        f"The element-wise mean of {len(averaged)} trained verifiers' weights (trained on 2 CPU cores in "
        f"{', '.join(took)}), calibrated after averaging"
        if averaged
        else f"{'The last stage trained' if settings.get('stages') else 'Trained'} on "
        f"{'a CUDA GPU' if on_gpu else '2 CPU cores'} in {settings.get('train_seconds')} s"
    )
    return "\n".join(
        [
            "# Model card: veracity's evidence verifier",
            "",
            f"- **Name:** `{settings['name']}`; weights `{settings['weights']}` (float16, "
            f"{'the whole model' if whole else 'only the layers training changed'}), sha256 `{settings['sha256']}`.",
            f"- **Base:** {settings['base']}; "
            + (
                "the folder holds the whole model, its config and tokenizer, and needs nothing else."
                if whole
                else "the package depends on it, so nothing is downloaded."
            ),
            "- **Task:** a claim (or an answer sentence) and one evidence passage in; probabilities of supported / "
            "refuted / not enough information (`nei`) out. Several passages: each is scored, and all of them "
            "together; the most decisive (least `nei`) decides and is named. When one sentence of the deciding passage "
            "(or window) alone reads the other label with 0.8 or more, and more surely than the passage reads its own, "
            "the two readings are averaged (verify/conflict.py).",
            f"- **Calibration:** temperature {settings['temperature']} fitted on the calibration part (below); with "
            f"several passages the deciding one's probabilities are tempered by "
            f"{describe_several(settings.get('aggregate_temperature', 1.0))} "
            "(choosing the most decisive of several looks surer than it is; fitted through `verify_many`, long passages "
            "in windows, on calibration FM2 claims against their page's retrieved sentences and joined claims against "
            "their evidence sentences). "
            f"Two-label sets use the rule `{describe_rule(settings['binary_rule'])}` (macro-F1 of each candidate on the "
            f"calibration pairs of two-label sources: {settings.get('binary_rule_on_calibration')}; a fitted rule is "
            "used when there are enough of them, as the temperature is). "
            f"Supported / not-supported sets use `{describe_rule(settings.get('not_supported_rule', 'supported_vs_rest'))}`"
            f" (each candidate's mean over the not-supported sources of its macro-F1 on each one's calibration pairs: "
            f"{settings.get('not_supported_rule_on_calibration')}; the highest is used).",
            *([uncertain] if uncertain else []),
            f"- **Maximum length:** {settings['max_length']} word pieces per pair"
            + (
                f" (trained on pairs of at most {trained_length}; `veracity verifier calibrate --max-length N` sets what "
                "it reads)"
                if trained_length != settings["max_length"]
                else ""
            )
            + (f"; {describe_fitted(fitted)}" if fitted else "")
            + (f"; {describe_cut(cut, trained_length)}." if cut else "."),
            f"- **Decision shipped:** `{settings.get('chosen')}` (mean held-out macro-F1 "
            f"{settings.get('mean_macro_f1_heldout')}): the cross-encoder alone, or a logistic regression over its "
            "log-probabilities and the lexical features fitted on the calibration part, whichever scores higher on "
            "the held-apart sets.",
            "",
            "## Data (from `../shared/training`; never the benchmarks)",
            "",
            "Every source is split three ways with nothing on two sides: training, calibration (temperature, stacker, "
            "two-label rule, uncertain threshold) and held apart (the figures below). Training pairs are capped per "
            "source so that no single style dominates (`verify/training/sources.py`, `verify/training/data.py`).",
            "",
            "- FM2 (Fool Me Twice; Apache-2.0, evidence sentences from Wikipedia, CC BY-SA): 2,549 claims split by "
            "Wikipedia page with a stable hash: 65% train, 10% calibration, 25% held out. Training pairs: each claim "
            "against its gold evidence, the same with 1-3 distractor sentences mixed in, and against two non-gold "
            "sentences of its page as `nei`; synthetic edits of its training pages' sentences "
            "(verify/training/synthetic.py: a number, a name, a negation or a word changed: refuted; another sentence: "
            "nei).",
            "- Two-part claims (verify/training/synthetic.py `compound_pairs`) made from the sentences of each FM2 part's "
            "pages: two statements joined into one claim, against several sentences of the page; supported when both are "
            "there, refuted when one has a fact changed, nei when one is a sentence the evidence lacks "
            "(`compound_heldout`: those of held-out pages).",
            "- Joined real claims (verify/training/synthetic.py `joined_pairs`): two or three human-written claims of one "
            "part (FM2 with its gold evidence, VitaminC, FEVER-Symmetric) joined into one claim, against their evidence "
            "sentences together, sometimes with an unrelated one; supported when every part is, refuted when one part is "
            "refuted, nei when one part's evidence does not settle it (`joined_heldout`: held-apart claims).",
            "- The same joined claims against some of their parts' evidence only (`joined_pairs` with `partial`), as "
            "each of a multi-hop claim's gold passages is read alone: refuted when a refuted part's evidence is there, "
            "else nei (`partial_heldout`: held-apart claims).",
            "- Off-topic pairs (verify/training/data.py `offtopic_pairs`): a claim of one part against the evidence of "
            "a pair of another source (up to 80 words), nei: what a retriever returns when nothing on the claim was found "
            "(`offtopic_heldout`: held-apart pairs of three-label sets beside their claims against an unrelated "
            "passage, half each).",
            "- Evidence about another subject (verify/training/data.py `other_subject_pairs`): a Wikipedia claim's "
            "evidence (VitaminC, FEVER-Symmetric, FM2) with every name sharing a word with the claim's opening name "
            "replaced by another claim's, nei (`other_subject_heldout`: held-apart pairs beside their changed copies).",
            "- A sentence on another point about the claim's subject (verify/training/data.py `same_subject_pairs`): a "
            "Wikipedia claim against the evidence of another claim opening with the same name, which names it and shares "
            "no other word or number with the claim, nei (`same_subject_heldout`: held-apart pairs beside such copies; a "
            "few of them are settled after all by what shares no word). Trained on only with `--same-subject N` (then "
            "counted under Sizes as `same-subject`).",
            "- CAD-SNLI (Apache-2.0, built on SNLI, CC BY-SA 4.0): its own train / dev / test.",
            "- The ten JSONL sources of `../shared/training` (VitaminC real and synthetic, FEVER-NLI and MultiNLI from "
            "DocNLI, FEVER-Symmetric, SNLI, BEGIN, SummEdits, Factcheck-GPT, Check-COVID, Breaking NLI; licences in "
            "each PROVENANCE.txt): pairs grouped by shared claim, premise or source item and split by a stable hash "
            "of the group, 75% training / 10% calibration / 15% held apart; the three FEVER-derived folders split "
            "together; Check-COVID by its own train / dev / test. The two-way sources' `not_supported` is trained as "
            "'refuted or nei' (the log of their summed probability), never as refuted.",
            "- `fm2_heldout_retrieved`: the held-out FM2 claims against their page's ten retrieved sentences (gold "
            "among them); `joined_heldout_passages`: the joined held-apart claims against their evidence sentences "
            "one by one, as a multi-hop claim's gold evidence comes; `offtopic_heldout_passages`: held-apart claims "
            "against their evidence among two unrelated passages (their label) and against three unrelated passages "
            "only (nei). All read as the pipelines read (`verify_many`: "
            "each passage, in windows when long, and all together, the most decisive deciding, tempered by the "
            "several-passages temperature fitted the same way on the calibration part's FM2 and joined claims).",
            f"- Sizes: {data}.",
            *([f"- Training draw of each averaged folder's last stage: {drawn}."] if drawn else []),
            "",
            "## How it was built",
            "",
            "```",
            *build_commands(settings, cmd),
            "```",
            "",
            f"{trained} (torch 2.13.0{'' if on_gpu else ' CPU'}). Seeded; a killed run "
            "resumes from its last checkpoint (every few hundred batches), mid-epoch.",
            "",
            "## Figures (held-apart data)",
            "",
            "Two-label sets (supported / refuted) by the rule above; two-way sets (supported / not_supported) as "
            "supported against the rest; three-way sets by the most probable label. top-20% accuracy: the accuracy of "
            "the fifth of verdicts the model is most confident of.",
            "",
            "| set | model | n | macro-F1 | accuracy | top-20% accuracy | ECE |",
            "|---|---|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"Speed while calibrating: {settings.get('ms_per_pair')} ms per claim-evidence pair (batches of 32, FM2 "
            "held-out pairs, other work on the cores); idle-machine speed, memory and benchmark figures (FEVEROUS-S, "
            "AVeriTeC): `python benchmarks/verifier_eval.py`.",
            "",
            "## Limits",
            "",
            "- English only; trained on Wikipedia sentences, news and dialogue, image captions and COVID-19 claims "
            "against scientific abstracts: legal and most medical text are still out of its domain.",
            "- It reads at most the maximum length above per pair. The pipelines read a longer passage in windows of "
            "whole sentences that fit (verify/windows.py; the most decisive window speaks for it), but the figures "
            "above score each pair once, cut at that length; a claim that needs sentences further apart than one "
            "window holds is still read in parts (SummEdits' whole documents are the hard case in the table).",
            "- FM2's claims need world knowledge and inference beyond the evidence; a 22M-parameter model gets only "
            "part of them right (figures above).",
            "",
        ]
    )
