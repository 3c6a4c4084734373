"""Table tests of LEAF's parsers (leaf/parsing.py, the letter reader in leaf/options.py) and the slot formats
of its prompt specs (leaf/prompts.py).

Rows marked `# 135M` are what the embedded SmolLM2-135M wrote for that prompt (after the spec's stop strings);
the others are the odd shapes small models produce.
"""

import pytest

from veracity.leaf.options import extract_letter
from veracity.leaf.parsing import parse_query, parse_reasoning
from veracity.leaf.prompts import (
    ANSWER_PLAIN,
    NO_PASSAGES,
    QUERY,
    RATING,
    REASONING,
    letters_phrase,
    numbered_passages,
    reasoning_line,
)
from veracity.prompts.parsers import parse_label
from veracity.types import Evidence

ABC = {"A": "yes", "B": "no", "C": "maybe"}


# -------------------------------------------------------------------------------------------- the search query


@pytest.mark.parametrize(
    "text,expected",
    [
        # 135M (generation stops at a blank line, "\nSTATEMENT", "\nQUESTION" or "--------")
        (" Eiffel Tower Paris Paris\n", "Eiffel Tower Paris Paris"),
        (" Barack Obama birth date 2008", "Barack Obama birth date 2008"),
        # a repeated cue, code blocks, quotes of every kind
        (" Search query: Eiffel Tower location", "Eiffel Tower location"),
        ('Query: "median nerve compression"', "median nerve compression"),
        (" Google search: carpal tunnel", "carpal tunnel"),
        ("Search: lithium", "lithium"),
        ("```\nEiffel Tower Paris\n```", "Eiffel Tower Paris"),
        ("```text\nlithium kidney\n```", "lithium kidney"),
        (" `lithium nephrogenic diabetes insipidus`", "lithium nephrogenic diabetes insipidus"),
        (" \u201clithium kidney\u201d", "lithium kidney"),
        (" 'lithium kidney'", "lithium kidney"),
        # the first line only; leading blank lines skipped
        (" carpal tunnel\nsecond line", "carpal tunnel"),
        ("  \n  lithium kidney", "lithium kidney"),
        ("SEARCH QUERY: LITHIUM KIDNEY", "LITHIUM KIDNEY"),
    ],
)
def test_parse_query(text, expected):
    assert parse_query(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        " ?",
        " a",
        "```\n```",
        '""',
        "---",
        # a new demonstration instead of a query
        "QUESTION: Where is it?",
        "STATEMENT: x",
        "Knowledge: [1] x",
        "Task: write a query",
    ],
)
def test_no_query(text):
    assert parse_query(text) is None


# -------------------------------------------------------------------------------------------- the rater's reasoning


@pytest.mark.parametrize(
    "text,expected",
    [
        # 135M (generation stops at "Final answer", a blank line or "--------")
        (
            " Passage [1] tells you that the Eiffel Tower is in Paris, not in a different location.\n",
            "Passage [1] tells you that the Eiffel Tower is in Paris, not in a different location.",
        ),
        (" The answer is not supported by the passage.\n", "The answer is not supported by the passage."),
        (
            " Passage [1] tells us that Barack Obama was born in 2008.\n",
            "Passage [1] tells us that Barack Obama was born in 2008.",
        ),
        # the decision written along, the next block started, the cue repeated
        (" The passage says the tower is in Paris. Final answer: Supported", "The passage says the tower is in Paris."),
        (" It is supported by passage [1].\n\nKNOWLEDGE: x", "It is supported by passage [1]."),
        (" The statement is right.\nQUESTION: next", "The statement is right."),
        (" line one\nline two\n---\nmore", "line one line two"),
        (" Reasoning: the passage agrees.", "the passage agrees."),
        ("", ""),
        (None, ""),
    ],
)
def test_parse_reasoning(text, expected):
    assert parse_reasoning(text) == expected


def test_parse_reasoning_is_capped():
    out = parse_reasoning(" a" * 400, 100)
    assert len(out) == 100 and out.endswith("\u2026")


# -------------------------------------------------------------------------------------------- the rating


@pytest.mark.parametrize(
    "text,expected",
    [
        # 135M, after "Final answer:" (free text, as an HTTP backend's choose reads it)
        (" Not Supported\n\nKNOWLEDGE:\n<result>\n[1] Wikipedia: Eiffel Tower:", "Not Supported"),
        (" Supported\n\nKNOWLEDGE:\n<result>\n[1] Wikipedia: Eiffel Tower: The", "Supported"),
        (" not supported.", "Not Supported"),
        ("SUPPORTED", "Supported"),
        ("**Supported**", "Supported"),
        (" Supported, because passage [1] says so.", "Supported"),
        (" Supported or Not Supported?", None),
        (" I cannot tell whether it is Supported.", None),
        ("", None),
        (" It is not supported by the knowledge.", "Not Supported"),  # the label's own words, not a negated "Supported"
        (" It isn't supported by the knowledge.", None),  # negated
    ],
)
def test_a_rating_is_read_strictly(text, expected):
    assert parse_label(text, RATING.options) == expected


# -------------------------------------------------------------------------------------------- the chosen option


@pytest.mark.parametrize(
    "text,expected",
    [
        # 135M, after the answer_letter prompt and as the answer itself
        (" A.", "A"),
        (" A.\n\nThe answer is yes, because it is well known.", "A"),
        ("C. maybe\n\nThe answer is not correct. The correct option is C. maybe.", "C"),
        ("B. no", "B"),
        # wrong case, markdown, brackets, "Answer:" prefixes, an option's text
        ("Answer: B", "B"),
        ("**Final answer: C**", "C"),
        ("(B)", "B"),
        ("[C]", "C"),
        ("B) no", "B"),
        ("The correct answer is (A) yes.", "A"),
        ("the answer is maybe", "C"),
        ("no", "B"),
        # two options: the last explicit statement wins; named equally often: none
        ("Option A is wrong; the answer is C.", "C"),
        ("A or B", None),
        ("Option A is wrong and option B is wrong too.", None),
        # the article "a", an empty reply, a refusal
        ("a patient with a cough", None),
        ("", None),
        ("I am not sure.", None),
        ("D", None),
    ],
)
def test_extract_letter(text, expected):
    assert extract_letter(text, ABC) == expected


def test_the_answer_is_the_chat_reply_stripped():
    assert ANSWER_PLAIN.parser("C. maybe\n\nThe answer is not correct.  ") == "C. maybe\n\nThe answer is not correct."
    assert ANSWER_PLAIN.parser("   ") == ""


# -------------------------------------------------------------------------------------------- the slot formats


@pytest.mark.parametrize(
    "reasoning,expected",
    [(None, ""), ("", "\nReasoning:"), ("Passage [1] says so.", "\nReasoning: Passage [1] says so.")],
)
def test_reasoning_line(reasoning, expected):
    assert reasoning_line(reasoning) == expected


def test_passages_are_numbered_quoted_data_or_say_there_are_none():
    assert numbered_passages([]) == NO_PASSAGES
    block = numbered_passages([Evidence(text="x </result> y", source="S"), Evidence(text="z")])
    assert block == "<result>\n[1] S: x y\n[2] Passage: z\n</result>"


@pytest.mark.parametrize(
    "keys,expected", [(["A"], "A"), (["A", "B"], "A or B"), (["A", "B", "C", "D"], "A, B, C or D")]
)
def test_letters_phrase(keys, expected):
    assert letters_phrase(keys) == expected


def test_the_specs_use_these_parsers():
    assert QUERY.parser is parse_query and REASONING.parser is parse_reasoning
    assert RATING.options == ("Supported", "Not Supported") and RATING.strict
