"""A text run that ended before it checked every claim (its worker lost, the database gone) shows the claims it did
not reach as not checked, saying why, not as "Checking..." for good (found in team mode: an interrupted text run)."""

from veracity.claims.sources import Source
from veracity.config import load_config
from veracity.llm import Model
from veracity.llm.scripted import ScriptedBackend
from veracity.registry import get_pipeline
from veracity.retrieval.index import given_evidence
from veracity.server.views import run_view
from veracity.textcheck.run import check_text
from veracity.textcheck.steps import STOPPED_NOTE
from veracity.trace import Tracer

TEXT = "The Danube flows into the Black Sea. The Rhine flows into the North Sea."


def test_the_claims_an_interrupted_text_run_did_not_reach_are_not_checked_not_pending():
    config = load_config(overrides={"cache": False}, env={})
    tracer = Tracer()
    check_text(
        Source(text=TEXT, title="rivers", origin="pasted", kind="text"),
        get_pipeline("verifier", config),
        Model(ScriptedBackend([])),
        config,
        retriever=given_evidence([("atlas", TEXT)]),
        tracer=tracer,
    )
    steps = tracer.to_list()
    first_claim = next(i for i, s in enumerate(steps) if s["stage"] == "text_claim")
    cut = steps[: first_claim + 1]  # the run stopped after its first claim
    live = [it for it in run_view(cut)[0] if it["kind"] == "text_claim"]
    assert [it["outcome"] for it in live][1] == "pending"  # as the live page shows it, while it runs
    ended = [it for it in run_view(cut, stopped=True)[0] if it["kind"] in ("text_claim", "text_mark")]
    assert "pending" not in {it["outcome"] for it in ended}
    second = [it for it in ended if it["kind"] == "text_claim"][1]
    assert second["outcome"] == "not_checked" and second["note"] == STOPPED_NOTE
