"""Table tests of QACheck's parsers (qacheck/parsing.py), through its prompt specs where a spec decides more.

Rows marked `# 135M` are what the embedded SmolLM2-135M wrote for that prompt (after the spec's stop strings);
the others are the odd shapes small models produce: empty output, a repeated prompt cue, markdown, quotes,
a new demonstration instead of an answer.
"""

import pytest

from veracity.qacheck.parsing import parse_closed_book, parse_passage, parse_question, parse_short_answer
from veracity.qacheck.prompts import CLOSED_BOOK, QUESTION_FIRST, READER, RECITE


@pytest.mark.parametrize(
    "text,expected",
    [
        # 135M, first and follow-up questions
        (" Which city is the capital of Germany?", "Which city is the capital of Germany?"),
        (" Which president was born in Hawaii?", "Which president was born in Hawaii?"),
        (" How many people are on the Eiffel Tower?", "How many people are on the Eiffel Tower?"),
        (" Who won the Nobel Prize in Physics?", "Who won the Nobel Prize in Physics?"),
        (" Who was Albert Einstein?", "Who was Albert Einstein?"),
        # the model answers its own question, or asks two
        (" Who wrote the novel Kestrel Bay?\nAnswer 1 = Mara Lind", "Who wrote the novel Kestrel Bay?"),
        (" Where was Mara Lind born? Answer 2 = Tallinn", "Where was Mara Lind born?"),
        (" Who wrote Kestrel Bay? Who was born in Tallinn?", "Who wrote Kestrel Bay?"),
        (" Who wrote Kestrel Bay?Who", "Who wrote Kestrel Bay?"),
        # the prompt's cue repeated, in any case
        ("Question 2 = Where was Mara Lind born?", "Where was Mara Lind born?"),
        ("question 1 = who wrote it?", "who wrote it?"),
        ("Q2: Who founded the city?", "Who founded the city?"),
        # markdown and quotes
        ("- Who founded the city?", "Who founded the city?"),
        ("1. Who founded the city?", "Who founded the city?"),
        ("**Question:** Who founded the city?", "Who founded the city?"),
        (' "What is the capital of France?"', "What is the capital of France?"),
        (" \u201cWho designed the tower?\u201d", "Who designed the tower?"),
        # no question mark: one is added
        (" The capital of Germany", "The capital of Germany?"),
        (" Who directed Jaws.", "Who directed Jaws?"),
        ("  \n  Who designed the tower?", "Who designed the tower?"),
    ],
)
def test_parse_question(text, expected):
    assert parse_question(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "   ",
        "?",
        " Paris",
        " Answer: Paris",
        # a new demonstration instead of a question
        "Claim = The tower is in Paris.",
        "Claim = The director of the film Jaws was born in Ohio.\nQuestion 1 = Who?",
        "--------",
        "Contexts:",
    ],
)
def test_no_question(text):
    assert parse_question(text) is None


@pytest.mark.parametrize(
    "text,expected",
    [
        # 135M, the reader
        (" Paris", "Paris"),
        (" 2008", "2008"),
        # the scripted world's answers and the odd ones
        (" Mara Lind", "Mara Lind"),
        (" Tallinn.", "Tallinn"),
        (" Unknown", "Unknown"),
        (" unknown.", "unknown"),
        (" Steven Spielberg\nQuestion = Who directed Jaws?", "Steven Spielberg"),
        ("Answer = 1975", "1975"),
        (" Paris Evidence = It is in Paris.", "Paris"),
        (" Paris, France.", "Paris, France"),
        (" 2,850 km", "2,850 km"),
        ("**Paris**", "Paris"),
        ("- Paris", "Paris"),
        (' "Tallinn"', "Tallinn"),
        ("A: Paris", "Paris"),
        (" Prediction = Paris", "Paris"),
        (" The answer is Paris.", "The answer is Paris"),
        (" Yes", "Yes"),
        (" \u201cTallinn\u201d", "Tallinn"),
    ],
)
def test_parse_short_answer(text, expected):
    assert parse_short_answer(text) == expected


@pytest.mark.parametrize("text", ["", "\n", " .", "**", " - "])
def test_no_short_answer(text):
    assert parse_short_answer(text) is None


@pytest.mark.parametrize(
    "text,expected",
    [
        # 135M (a wrong answer, read as written: the validator and the reasoner judge it)
        (
            " Paris\nEvidence = The Eiffel Tower, the iconic iron latticework tower in Paris, is located in the city of Paris.",
            ("Paris", "The Eiffel Tower, the iconic iron latticework tower in Paris, is located in the city of Paris."),
        ),
        (
            " 2008\nEvidence = Barack Obama was born on January 20, 2008.",
            ("2008", "Barack Obama was born on January 20, 2008."),
        ),
        (
            " Steven Spielberg\nEvidence = The 1975 film Jaws was directed by Steven Spielberg.",
            ("Steven Spielberg", "The 1975 film Jaws was directed by Steven Spielberg."),
        ),
        (" Paris", ("Paris", None)),
        (" Tallinn\nEvidence =", ("Tallinn", None)),
        (" Paris\nevidence: It is the capital.", ("Paris", "It is the capital.")),
        (" 1975\nEvidence = Jaws was released in 1975.\n\nQuestion = Who?", ("1975", "Jaws was released in 1975.")),
        # the answer line missing: the evidence line is read as the answer too
        (
            "Evidence = Jaws was directed by Spielberg.",
            ("Jaws was directed by Spielberg", "Jaws was directed by Spielberg."),
        ),
        # an unusable answer line, but evidence: the answer falls back, the evidence is kept
        (" .\nEvidence = x y z", (None, "x y z")),
        ("", (None, None)),
    ],
)
def test_parse_closed_book(text, expected):
    assert parse_closed_book(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        # 135M
        (
            " The Eiffel Tower is a monumental iron tower in Paris, France. It is the tallest man-made structure in the world.",
            "The Eiffel Tower is a monumental iron tower in Paris, France. It is the tallest man-made structure in the world.",
        ),
        (
            " Barack Obama was born on January 22, 1963. He was the 46th President of the United States.",
            "Barack Obama was born on January 22, 1963. He was the 46th President of the United States.",
        ),
        (
            " Kestrel Bay is a 1998 novel by the writer Mara Lind.",
            "Kestrel Bay is a 1998 novel by the writer Mara Lind.",
        ),
        (" Paris is the capital of France.\nQuestion = Where?", "Paris is the capital of France."),
        ("Relevant passage = Mara Lind was born in Tallinn in 1950.", "Mara Lind was born in Tallinn in 1950."),
        (" Line one is here.\nLine two follows.", "Line one is here. Line two follows."),
        (
            "- Mara Lind was born in Tallinn.\n- She wrote Kestrel Bay.",
            "Mara Lind was born in Tallinn. She wrote Kestrel Bay.",
        ),
        (" The Eiffel Tower is tall\n---\nClaim = x", "The Eiffel Tower is tall"),
    ],
)
def test_parse_passage(text, expected):
    assert parse_passage(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Paris.",
        " Too short",
        "Question = Where was Mara Lind born?",
        "Claim = The tower is in Rome.",
        "---\nMara Lind was born in Tallinn.",
    ],
)
def test_no_passage(text):
    assert parse_passage(text) is None


def test_the_specs_use_these_parsers_and_fail_as_the_pipeline_falls_back():
    assert QUESTION_FIRST.parser is parse_question and READER.parser is parse_short_answer
    assert RECITE.parser is parse_passage and CLOSED_BOOK.parser is parse_closed_book
    # a closed-book reply is unusable only without an answer; its evidence may still be there
    assert CLOSED_BOOK.usable(("Paris", None)) and not CLOSED_BOOK.usable((None, "x y z"))
    assert (QUESTION_FIRST.problem, READER.problem, RECITE.problem) == ("no question", "no answer", "no passage")
