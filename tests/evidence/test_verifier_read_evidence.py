"""The passages the trained verifier read for a verdict are shown with it everywhere: as the check's evidence (MCP's
`check_claim`, a text check's claims), first, with their license, and as something to re-check, even where the
model only recited from memory (the issue's Danube check said "nothing to re-check" and MCP showed the recital)."""

from veracity.check import run_check
from veracity.config import load_config
from veracity.evidence.stored import nothing_to_recheck
from veracity.llm import Model
from veracity.llm.scripted import ScriptedBackend
from veracity.mcp_server import schemas as sc
from veracity.mcp_server.tools import claim_text
from veracity.registry import get_pipeline
from veracity.retrieval import Document, Index
from veracity.textcheck.run import evidence_of
from veracity.types import Claim

LEAD = (
    "The Danube is the second-longest river in Europe, after the Volga in Russia. It flows through much of Central "
    "and Southeastern Europe, from the Black Forest into the Black Sea. Originating in Germany, it flows southeast "
    "for 2,850 km, passing through or bordering Austria, Slovakia, Hungary, Croatia, Serbia and Romania."
)
RULES = [
    (r"Yes or no\?\nPrediction =$", "Yes, we can know."),
    (r"first ask a simple question:\nQuestion =$", " Where does the Danube flow into?"),
    (r"Relevant passage =$", " The Danube flows into the Black Sea."),
    (r"Passages:\n(?:(?!-{8}).)*Answer =$", " The Black Sea"),
    (r"useful for verifying the claim\?\nThe answer:$", " Yes"),
    (r"Is this claim true or false\?\nAnswer:$", "\nIt flows into the Black Sea.\n"),
    (r"final answer is:$", " True"),
]


def test_the_passage_the_verifier_read_is_the_checks_evidence_first_with_its_license():
    cfg = load_config(overrides={"verifier.use": "on", "qacheck.qa": "reciter-reader"}, env={})
    index = Index.from_documents(
        [Document(id="Danube", title="Danube", text=LEAD, url="https://en.wikipedia.org/wiki/Danube")],
        knowledge_base="kb:wikipedia-en",
    )
    result = run_check(
        Claim("The Danube flows into the Black Sea."),
        get_pipeline("qacheck", cfg),
        Model(ScriptedBackend(RULES)),
        cfg,
        retriever=index.retriever("bm25"),
    )
    trace = result.trace
    read = evidence_of(trace)
    assert read[0]["source"] == "Danube" and read[0]["license"] == "Wikipedia, CC BY-SA 4.0", read
    assert any(e["source"] == "recited by the model" for e in read[1:])  # the recital after, as memory
    assert nothing_to_recheck(trace) is None  # the verifier's passage is a source to read again
    text = claim_text(
        sc.ClaimResult(
            run_id="r1",
            claim="The Danube flows into the Black Sea.",
            shown_as="Supported",
            label="Supported",
            confidence=0.9,
            uncertain=False,
            rationale="",
            pipeline="qacheck",
            model="scripted",
            basis="evidence",
            evidence=sc.passages(read),
        )
    )
    line = next(x for x in text.splitlines() if x.startswith("- "))
    assert line.endswith("(Danube, https://en.wikipedia.org/wiki/Danube, Wikipedia, CC BY-SA 4.0)"), line
    assert "... (Danube" in line and " t (" not in line  # cut at a word's end, not mid-word
