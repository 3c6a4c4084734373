"""Claim extraction: real text split into atomic claims whose spans slice back to the source, pronouns resolved
or flagged, what is not checkable kept out of the checks, repeats merged, and the model's decomposition read
(scripted backend) with the rules standing in where its reply is unusable."""

from veracity.claims import AMBIGUOUS, CHECKABLE, NOT_CHECKABLE, extract_claims, sentence_spans
from veracity.llm import Model, UsageMeter
from veracity.llm.scripted import ScriptedBackend

BIO = (
    "Lanny Flaherty is an American actor born on December 18, 1949, in Pensacola, Florida. He has appeared "
    "in numerous films, television shows, and theater productions throughout his career, which began in the "
    'late 1970s.\r\nSome of his notable film credits include "King of New York," "The Abyss," and "The Game."'
)


def by_text(extraction):
    return {c.text: c for c in extraction.claims}


def test_sentence_spans_slice_back_to_the_source_text():
    text = "Dr. Smith was\r\nborn in 1950.   He died in 2001.\n\n- first item\n- second item"
    spans = sentence_spans(text)
    assert [s.text for s in spans] == [
        "Dr. Smith was born in 1950.",
        "He died in 2001.",
        "- first item",
        "- second item",
    ]
    for s in spans:
        assert " ".join(text[s.start : s.end].split()) == s.text


def test_rules_split_clauses_lists_and_relative_clauses_and_resolve_the_pronoun():
    ex = extract_claims(BIO)
    assert ex.method == "rules"
    claims = by_text(ex)
    for expected in (
        "Lanny Flaherty has appeared in numerous films.",
        "Lanny Flaherty has appeared in television shows.",
        "Lanny Flaherty's career began in the late 1970s.",
        'Some of Lanny Flaherty\'s notable film credits include "The Abyss"',
    ):
        assert expected in claims, sorted(claims)
    for c in ex.claims:
        assert c.status == CHECKABLE and c.method == "rules"
        assert all(0 <= s < e <= len(BIO) for s, e in c.spans + c.context)
    abyss = claims['Some of Lanny Flaherty\'s notable film credits include "The Abyss"']
    assert [BIO[s:e] for s, e in abyss.spans] == ["Some of his notable film credits include", "The Abyss"]
    assert [BIO[s:e] for s, e in abyss.context] == ["Lanny Flaherty"]  # where the name came from


def test_an_elliptical_clause_gets_the_subject_it_shares():
    text = "Marie Curie was born in Warsaw and moved to Paris in 1891; she died in 1934."
    claims = by_text(extract_claims(text))
    assert set(claims) == {
        "Marie Curie was born in Warsaw.",
        "Marie Curie moved to Paris in 1891.",
        "Marie Curie died in 1934.",
    }
    moved = claims["Marie Curie moved to Paris in 1891."]
    assert [text[s:e] for s, e in moved.spans] == ["Marie Curie", "moved to Paris in 1891"]


def test_unresolvable_references_are_flagged_not_guessed():
    text = (
        "He was born in 1950. John Smith met Bill Jones in 1990. He said hello. They married in 2001. "
        "I was born in Ohio. This was a record."
    )
    claims = extract_claims(text).claims
    assert [c.status for c in claims] == [AMBIGUOUS, CHECKABLE, AMBIGUOUS, AMBIGUOUS, AMBIGUOUS, AMBIGUOUS]
    assert "no one is named" in claims[0].reason
    assert "John Smith" in claims[2].reason and "Bill Jones" in claims[2].reason
    assert claims[2].text == "He said hello."  # left as written


def test_a_pronoun_of_an_earlier_person_is_not_resolved_to_a_newer_topic():
    text = "Ada Lovelace was a mathematician. She was born in London. Paris is a city. She died in 1852."
    claims = by_text(extract_claims(text))
    assert claims["Ada Lovelace was born in London."].status == CHECKABLE
    assert claims["She died in 1852."].status == AMBIGUOUS


def test_a_pronoun_after_the_sentences_own_named_subject_means_that_subject():
    text = (
        "The Eiffel Tower is a tower in Paris. It was completed in 1889. "
        "The Colosseum is in Rome, and it was built in AD 80."
    )
    claims = by_text(extract_claims(text))
    # the name as the source writes it, with its article
    assert claims["The Eiffel Tower was completed in 1889."].status == CHECKABLE
    built = next(c for t, c in claims.items() if "built in AD 80" in t)
    assert built.status == CHECKABLE and built.text == "The Colosseum was built in AD 80.", built
    # in a sentence of its own, the same pronoun could still mean either: flagged
    later = by_text(extract_claims(text.replace(", and it was", ". It was")))
    assert later["It was built in AD 80."].status == AMBIGUOUS


def test_questions_advice_opinions_and_greetings_are_not_checkable():
    text = "Hello! Is Paris in France? You should visit Paris. I think Paris is lovely. Paris is in France."
    ex = extract_claims(text)
    assert [(c.status, c.reason) for c in ex.claims] == [
        (NOT_CHECKABLE, "greeting"),
        (NOT_CHECKABLE, "question"),
        (NOT_CHECKABLE, "advice"),
        (NOT_CHECKABLE, "opinion"),
        (CHECKABLE, ""),
    ]
    assert ex.note is None
    assert "no checkable claim" in extract_claims("Hello! How are you? Thanks.").note


def test_near_identical_claims_are_merged_with_both_spans_and_different_numbers_are_not():
    text = (
        "Paris is the capital of France. The city hosted the 1900 Olympics. Paris is the capital of France! "
        "The city hosted the 1924 Olympics."
    )
    ex = extract_claims(text)
    capital = [c for c in ex.claims if "capital" in c.text]
    assert len(capital) == 1 and len(capital[0].spans) == 2
    assert len([c for c in ex.claims if "Olympics" in c.text]) == 2


def _model(rules):
    backend = ScriptedBackend(rules)
    return Model(backend).bind(UsageMeter()), backend


def test_the_models_facts_are_read_and_an_unusable_reply_falls_back_to_the_rules():
    text = "Marie Curie was a chemist. She won the Nobel Prize in 1903 and in 1911."
    model, backend = _model(
        [
            (
                r"SENTENCE: Marie Curie was a chemist\.\nFACTS:\n?$",
                "- Marie Curie was a chemist.\n- The moon is cheese.",
            ),
            (r"SENTENCE: She won the Nobel Prize.*\nFACTS:\n?$", "I cannot help with that."),
        ]
    )
    ex = extract_claims(text, method="model", model=model)
    assert ex.method == "model+rules" and ex.model_sentences == 1 and ex.fallback_sentences == 1
    assert [(c.text, c.method) for c in ex.claims][:1] == [("Marie Curie was a chemist.", "model")]
    assert not any("cheese" in c.text for c in ex.claims)  # not grounded in the sentence: dropped
    assert ex.claims[1].method == "rules" and ex.claims[1].text.startswith("Marie Curie won the Nobel Prize")
    assert len(backend.calls) == 2 and any("sentence 2" in f for f in ex.parse_failures)


def test_auto_uses_the_rules_for_in_process_models():
    model, backend = _model([(r".*", "- anything")])
    ex = extract_claims("Paris is in France.", method="auto", model=model)
    assert ex.method == "rules" and not backend.calls


def test_a_long_text_is_split_as_pysbd_splits_it_whole(monkeypatch):
    """pysbd's time grows with the square of a block's length, so a long block is segmented a piece at a time;
    each piece's last sentence starts the next one, so the sentences are the same as pysbd's over the whole."""
    import veracity.claims.sentences as sentences

    text = " ".join(
        f"Dr. Ada Vance measured {i}.5 km of the river e.g. near St. Mary's in {1900 + i}. Was it wider? "
        f"She said so, vs. the 1850 map!"
        for i in range(40)
    )
    monkeypatch.setattr(sentences, "CHUNK_CHARS", 10**9)
    whole = sentence_spans(text)
    monkeypatch.setattr(sentences, "CHUNK_CHARS", 150)  # cuts inside sentences and abbreviations
    pieces = sentence_spans(text)
    assert [(s.text, s.start, s.end) for s in pieces] == [(s.text, s.start, s.end) for s in whole]
    assert len(pieces) == 120 and all(" ".join(text[s.start : s.end].split()) == s.text for s in pieces)
    # one sentence longer than a piece is cut into pieces rather than segmented in quadratic time
    endless = "word " * 200 + "end."
    assert " ".join(s.text for s in sentence_spans(endless)) == " ".join(endless.split())


def test_a_name_the_claim_writes_after_its_pronoun_is_not_what_the_pronoun_stands_for():
    """A user's text: "It was designed by Hedda Lund, who was born in Oslo." was reported as ambiguous between the
    Orrin Bridge and Hedda Lund."""
    text = "The Orrin Bridge is a stone bridge in Tallinn. It was designed by Hedda Lund, who was born in Oslo."
    claims = {c.text: c for c in extract_claims(text).claims}
    designed = next(c for t, c in claims.items() if "designed by Hedda Lund" in t)
    assert designed.status == CHECKABLE, (designed.text, designed.reason)
    assert designed.text.startswith("The Orrin Bridge was designed by Hedda Lund")
