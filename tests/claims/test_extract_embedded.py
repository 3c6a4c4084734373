"""The embedded SmolLM2-135M asked to decompose a sentence: whatever it writes, every claim comes back grounded
in the sentence with its span, and the result names whether the model or the rules made it."""

import pytest

from veracity.claims import extract_claims
from veracity.claims.model import grounded
from veracity.llm import Model, UsageMeter
from veracity.llm.embedded import EmbeddedBackend

pytestmark = [pytest.mark.embedded, pytest.mark.native]


def test_embedded_model_extraction_is_grounded_or_falls_back():
    text = "Marie Curie was born in Warsaw in 1867 and moved to Paris in 1891."
    model = Model(EmbeddedBackend(n_ctx=2048, n_threads=1)).bind(UsageMeter())
    ex = extract_claims(text, method="model", model=model)
    assert ex.method in ("model", "model+rules") and ex.model_sentences + ex.fallback_sentences == 1
    assert ex.claims and all(c.spans == [(0, len(text))] or c.method == "rules" for c in ex.claims)
    assert all(grounded(c.text, text, "") for c in ex.claims if c.method == "model")  # nothing invented kept
