"""`veracity.grounding.ground`: an answer against the documents it was given, with the shipped verifier (real
reading, no model call): every sentence kept, the part of a document that decided each one quoted at its offsets,
long documents read to their end, and bad documents refused with a message that says what to give."""

import pytest

from veracity.errors import UserError
from veracity.grounding import as_documents, ground
from veracity.grounding.documents import MIN_QUESTION_DOCUMENT, request_documents

TOWER = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named after the "
    "engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889. The tower is 330 metres "
    "tall."
)
FILLER = [
    f"The {name} river flows through farmland and small towns before it reaches the sea."
    for name in ("Arno", "Loire", "Ebro", "Tagus", "Douro", "Rhone", "Seine", "Garonne", "Po", "Tiber", "Elbe", "Oder")
] * 4


def test_every_sentence_is_kept_with_its_span_verdict_and_the_quote_that_decided_it():
    answer = "The Eiffel Tower is in Paris.\n\nThe tower is 500 metres tall. Its architect loved cheese."
    result = ground(answer, [TOWER, {"id": "kb-7", "title": "Paris", "text": "Paris is the capital of France."}])
    assert [s.text for s in result.sentences] == [
        "The Eiffel Tower is in Paris.",
        "The tower is 500 metres tall.",
        "Its architect loved cheese.",
    ]
    for s in result.sentences:
        assert answer[s.span[0] : s.span[1]] == s.text
        doc = {"doc-1": TOWER, "kb-7": "Paris is the capital of France."}[s.quote["document"]]
        assert doc[s.quote["start"] : s.quote["end"]] == s.quote["text"]
    paris, height, cheese = result.sentences
    assert paris.label == "supported" and paris.decided and paris.quote["document"] == "doc-1"
    assert height.label == "contradicted" and "330 metres" in height.quote["text"]
    assert cheese.label != "supported"
    d = result.to_dict()
    assert d["sentences"][0]["shown_as"] == "Supported" and d["documents"][1]["id"] == "kb-7"
    assert result.grounded_share == d["supported"] / d["decided"]


def test_a_long_document_is_read_to_its_end_and_the_quote_points_at_the_part_that_supports():
    fact = "The Orrin Bridge in Tallinn was opened in 1987 by mayor Kalev Rand."
    doc = " ".join(FILLER) + " " + fact
    found = ground("The Orrin Bridge was opened in 1987.", [doc]).sentences[0]
    assert found.label == "supported" and found.parts_read > 5
    assert found.quote["end"] == len(doc) and fact in found.quote["text"]
    missing = ground("The Orrin Bridge was opened in 1987.", [" ".join(FILLER)]).sentences[0]
    assert missing.label != "supported" and missing.probability < 0.5


def test_sentences_no_part_supports_alone_are_not_grounded_by_parts_read_together():
    # each document holds half of the sentence: no single part supports all of it
    docs = ["Marie Curie was born in Warsaw.", "Marie Curie won two Nobel Prizes."]
    s = ground("Marie Curie was born in Warsaw and won two Nobel Prizes.", docs).sentences[0]
    both = ground("Marie Curie was born in Warsaw and won two Nobel Prizes.", [" ".join(docs)]).sentences[0]
    assert s.probability < both.probability


@pytest.mark.parametrize(
    "documents, says",
    [
        ([], "no document has any text"),
        (["  ", ""], "no document has any text"),
        ([3], "document 1 is a int"),
        ([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}], "two documents have the id 'a'"),
    ],
)
def test_documents_that_cannot_be_read_are_refused_saying_what_to_give(documents, says):
    with pytest.raises(UserError, match=says):
        as_documents(documents)


def test_an_empty_answer_is_refused():
    with pytest.raises(UserError, match="empty"):
        ground("   ", [TOWER])


def test_a_requests_documents_are_its_context_tool_results_and_marked_parts_never_the_assistants():
    long_user = "Here is the report:\n" + "The plant opened in 1990. " * (MIN_QUESTION_DOCUMENT // 20)
    messages = [
        {"role": "system", "content": "Answer from the documents.\n\nDoc A: The plant opened in 1990."},
        {"role": "user", "content": long_user},
        {"role": "assistant", "content": "The plant opened in 1850."},
        {"role": "tool", "tool_call_id": "call_7", "content": "Search result: the plant employs 300 people."},
        {"role": "developer", "veracity": "ignore", "content": "Be concise."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "When did it open?"},
                {"type": "text", "text": "Attached: the plant's 2020 report.", "veracity": "document"},
            ],
        },
    ]
    docs = request_documents(messages)
    assert [d.id for d in docs] == ["system-1", "user-2", "tool-4", "user-6"]
    assert docs[2].title == "call_7" and docs[3].text == "Attached: the plant's 2020 report."
    assert request_documents([{"role": "user", "content": "When did it open?"}]) == []


def test_with_many_parts_each_sentence_is_read_closely_beside_the_parts_nearest_it():
    facts = [
        "The Orrin Bridge in Tallinn was opened in 1987 by mayor Kalev Rand.",
        "The Velda River flows into the Gulf of Riga.",
    ]
    docs = [" ".join(FILLER[:24] + [facts[0]]), " ".join(FILLER[24:] + [facts[1]])]
    answer = (
        "The Orrin Bridge was opened in 1987. The Velda River flows into the Gulf of Riga. The Arno river flows "
        "through farmland. The Orrin Bridge is made of glass. Kalev Rand was a mayor."
    )
    result = ground(answer, docs)
    bridge, velda = result.sentences[:2]
    assert bridge.parts_read > 15 and bridge.read_closely == 6  # every part embedded, six read beside it
    assert bridge.label == "supported" and facts[0] in bridge.quote["text"]
    assert velda.label == "supported" and velda.quote == {**velda.quote, "document": "doc-2", "text": facts[1]}
    assert result.sentences[3].label != "supported"  # glass: no part says so
