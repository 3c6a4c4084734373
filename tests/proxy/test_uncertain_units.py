"""One uncertain rule on every surface: a sentence the verifier rated without deciding (its sources do not address
it) reads "Uncertain, leaning ..." in the proxy's annotations, as on the page, and is not flagged "[unsupported]"."""

from veracity.proxy.checking import result_view
from veracity.proxy.policies import FLAG, flag_points, flagged

ANSWER = "The Danube flows into the Black Sea. The Danube is 900 km long."


def _step(index, sentence, rating, reason=""):
    step = {"stage": "leaf_sentence", "index": index, "sentence": sentence, "query": sentence, "evidence": [],
            "rating": rating, "supported": rating == "Supported", "confidence": 0.62, "reasoning": ""}  # fmt: skip
    return {**step, "uncertain_reason": reason} if reason else step


def test_a_sentence_its_sources_do_not_address_is_uncertain_and_not_flagged():
    steps = [
        _step(1, "The Danube flows into the Black Sea.", "Not Supported",
              "the sources read do not address the claim (the trained verifier reads not enough information, 0.71)"),
        _step(2, "The Danube is 900 km long.", "Not Supported"),
        {"stage": "leaf_score", "score": 0.0, "checked": 2, "total_sentences": 2},
    ]  # fmt: skip
    view = result_view(steps, ANSWER)
    first, second = view["units"]
    assert first["uncertain"] and first["shown_as"].startswith("Uncertain")
    assert first["uncertain_reason"].startswith("the sources read do not address the claim")
    assert not second["uncertain"] and second["shown_as"] == "Not Supported"
    points = flag_points(view)
    assert flagged(ANSWER, points) == ANSWER + FLAG  # only the decided one
