"""Table tests of the shared parsers (prompts/parsers.py, and the backends' first reading of a decision).

Rows marked `# 135M` are what the embedded SmolLM2-135M wrote for the prompt named (free text, as an HTTP
backend's `choose` would read it); the others are the odd shapes small models produce.
"""

import pytest

from veracity.llm.base import match_option
from veracity.prompts.parsers import (
    FINAL_ANSWER_CUE,
    TRUE_FALSE,
    TRUTH_TO_LABEL,
    choice_text,
    is_parsed,
    parse_label,
    parse_rationale,
    text_lines,
)

TF = TRUE_FALSE
DEFAME = ["Supported", "Refuted", "Not Enough Information"]
AVERITEC = ["Supported", "Refuted", "Not Enough Evidence", "Conflicting Evidence/Cherrypicking"]
LEAF = ["Supported", "Not Supported"]


# -------------------------------------------------------------------------------------------- parse_label


@pytest.mark.parametrize(
    "text,labels,expected",
    [
        # 135M, the reasoner's and CoT's "Therefore, the final answer is:" (it goes on with a new demonstration)
        (" False.\n\nContexts:\nQ1: What is the capital of France?\nA1: Paris\n", TF, "False"),
        (" False.", TF, "False"),
        # 135M, the direct baseline
        (" False\n\nClaim = The city of Paris is home to the capital of France.\nIs this claim true or", TF, "False"),
        (" True\n\nClaim = The city of Barcelona is located in Spain.\nIs this claim true or false?\n", TF, "True"),
        # 135M, reasoning that ends with its own answer line
        ("\nThe Eiffel Tower is located in Paris.\nThe answer is: False.", TF, "False"),
        ("\nNo, this claim is false. Barack Obama was born in the United States.", TF, "False"),
        # 135M, DEFAME's judge after "Verdict:" and the direct baseline over AVeriTeC's labels
        (
            " Supported\nEvidence: \n- The Eiffel Tower is located in Berlin.\n- The Eiffel Tower is",
            DEFAME,
            "Supported",
        ),
        (
            ' Supported\n\nIn this example, the claim is "The Eiffel Tower is located in Berlin." The evidence confirms',
            AVERITEC,
            "Supported",
        ),
        (
            ' Supported\n\nClaim: "Barack Obama was born in Hawaii."\nVerdict: Not Enough Evidence\n',
            AVERITEC,
            "Supported",
        ),
        # wrong case, punctuation, markdown, quotes, an "Answer:" prefix
        ("TRUE", TF, "True"),
        ("false", TF, "False"),
        (" refuted.", DEFAME, "Refuted"),
        ("**Refuted**", DEFAME, "Refuted"),
        ("- Refuted", DEFAME, "Refuted"),
        ("\u201cRefuted\u201d", DEFAME, "Refuted"),
        ("'True'", TF, "True"),
        ("Answer: False", TF, "False"),
        ("Final answer: Not Supported", LEAF, "Not Supported"),
        ("Verdict: not enough information", DEFAME, "Not Enough Information"),
        ("(Supported)", LEAF, "Supported"),
        ("`Not Supported`", LEAF, "Not Supported"),
        # a label with trailing chatter
        (" Refuted. The evidence shows the tower is still in Paris.", DEFAME, "Refuted"),
        (" True. Kestrel Bay was written by Mara Lind, who was born in Tallinn.", TF, "True"),
        (" Not Supported: the passages say nothing about the dose.", LEAF, "Not Supported"),
        (
            " Conflicting Evidence/Cherrypicking - the numbers are cherry-picked",
            AVERITEC,
            "Conflicting Evidence/Cherrypicking",
        ),
        # two labels: only an explicit final answer at the end decides
        ("Supported or Refuted? Answer: Refuted", DEFAME, "Refuted"),
        ("True or false? The claim is false.", TF, "False"),
    ],
)
def test_parse_label_reads_one_asserted_label(text, labels, expected):
    assert parse_label(text, labels) == expected


@pytest.mark.parametrize(
    "text,labels",
    [
        # 135M, DEFAME's judge: it repeats the label list of the prompt
        (
            " \n- Supported: the evidence confirms the claim\n- Refuted: the evidence contradicts the claim\n- Not",
            DEFAME,
        ),
        (
            "\n- Supported: the evidence confirms the claim\n- Refuted: the evidence contradicts the claim\n"
            "- Not Enough Information: the evidence neither confirms nor contradicts the claim",
            DEFAME,
        ),
        # empty, blank, a new demonstration right away
        ("", TF),
        ("   ", TF),
        ("\n\nClaim = The tower is in Rome.\nIs this claim true or false? True", TF),
        # two labels without a final answer, or asked rather than asserted
        ("True False", TF),
        ("Supported. Refuted.", DEFAME),
        ("Supported, Not Supported", LEAF),
        ("True or False?", TF),
        # negated, hedged, refused
        ("Not true.", TF),
        ("It isn't supported by the passages.", LEAF),
        ("It is not Refuted", DEFAME),
        ("Maybe true.", TF),
        ("I cannot tell whether it is Supported.", LEAF),
        ("Possibly false", TF),
        ("Unknown", TF),
        ("Neither.", DEFAME),
        ("I don't know", TF),
        # no label at all: a yes/no, a letter, a label of another set
        (" Yes", TF),
        (" A", DEFAME),
        (" Supported", TF),
        (" Correct.", TF),
    ],
)
def test_parse_label_gives_none_for_anything_else(text, labels):
    assert parse_label(text, labels) is None


def test_parse_label_without_labels_or_text():
    assert parse_label(None, TF) is None and parse_label("True", []) is None


# -------------------------------------------------------------------------------------------- parse_rationale


@pytest.mark.parametrize(
    "text,expected",
    [
        # 135M, the reasoner and the CoT baseline (generation stops at "Therefore", "\n\n" or "final answer")
        (
            "\nThe Eiffel Tower is located in Paris. The Eiffel Tower is in Paris. So it is not in Berlin.\n",
            "The Eiffel Tower is located in Paris. The Eiffel Tower is in Paris. So it is not in Berlin.",
        ),
        (
            "\nThe Eiffel Tower is located in Paris.\nThe answer is: False.",
            "The Eiffel Tower is located in Paris.\nThe answer is: False.",
        ),
        (
            "\nNo, this claim is false. Barack Obama was born in the United States.",
            "No, this claim is false. Barack Obama was born in the United States.",
        ),
        # the cue itself, in any case, cuts the rationale
        (
            " Kestrel Bay was written by Mara Lind.\nTherefore, the final answer is True.",
            "Kestrel Bay was written by Mara Lind.",
        ),
        ("It is true.\n  the final answer is True", "It is true."),
        ("It holds. THEREFORE the final answer: True", "It holds."),
        (" Therefore, the final answer is: False.", ""),
        # blank lines and indentation go; lines stay lines
        ("  First.\n\n   Second.  \n", "First.\nSecond."),
        ("", ""),
        ("\n \n", ""),
    ],
)
def test_parse_rationale(text, expected):
    assert parse_rationale(text) == expected


def test_the_cue_and_the_label_map_of_the_true_false_prompts():
    assert FINAL_ANSWER_CUE == "Therefore, the final answer is:"
    assert [TRUTH_TO_LABEL[x] for x in TF] == ["Supported", "Refuted"]


# -------------------------------------------------------------------------------------------- text_lines


@pytest.mark.parametrize(
    "text,expected",
    [
        ("", []),
        ("\n\n", []),
        (" a \n\n b ", ["a", "b"]),
        ("a\r\nb\rc", ["a", "bc"]),
        ("\tx\t", ["x"]),
        (" Who wrote it?\nAnswer 1 = Mara", ["Who wrote it?", "Answer 1 = Mara"]),
    ],
)
def test_text_lines(text, expected):
    assert text_lines(text) == expected


# -------------------------------------------------------------------------------------------- a decision's text


@pytest.mark.parametrize(
    "raw,method,expected",
    [
        ("Perhaps.\n---retry---\nTrue", "parse-retry", "True"),
        ("Perhaps.\n---retry---\nMaybe.\n---retry---\nFalse", "parse-retry", "False"),
        ("True\n---retry---\nx", "parse", "True\n---retry---\nx"),
        ("", "logprob", ""),
    ],
)
def test_choice_text_is_the_retry_answer_after_a_retry(raw, method, expected):
    assert choice_text(raw, method) == expected


@pytest.mark.parametrize(
    "method,parsed", [("parse", True), ("parse-retry", True), ("logprob", False), ("grammar", False), ("", False)]
)
def test_is_parsed(method, parsed):
    assert is_parsed(method) is parsed


@pytest.mark.parametrize(
    "text,options,expected",
    [
        # 135M, the claim verifier and the validator (the backend's first reading; the earliest option wins)
        (
            " Yes, we can know.\n\nClaim = The first person to walk on the moon was Neil Armstrong.\n",
            ["Yes", "No"],
            "Yes",
        ),
        (
            " No\n\nClaim = The city of Barcelona is located in Spain.\nWe already know the following:\nQuestion",
            ["Yes", "No"],
            "No",
        ),
        ("No, we cannot know yet.", ["Yes", "No"], "No"),
        ("YES", ["Yes", "No"], "Yes"),
        ("**No**", ["Yes", "No"], "No"),
        ("Yesterday it rained.", ["Yes", "No"], None),
        ("", ["Yes", "No"], None),
        ("Nope", ["Yes", "No"], None),
        ("The claim is supported.", ["Supported", "Refuted"], "Supported"),
        (" web_search", ["web_search", "image_search"], "web_search"),
    ],
)
def test_match_option_is_the_backends_first_reading(text, options, expected):
    assert match_option(text, options) == expected


@pytest.mark.parametrize(
    "text, stated",
    [
        ("No, the claim is false.", "Refuted"),  # the embedded model's reply under a Supported verdict (issue 13)
        ("So the claim is true.", "Supported"),
        ("Therefore the statement is not correct.", "Refuted"),
        ("The claim isn't accurate.", "Refuted"),
        ("The claim is true in part, but the claim is false overall.", None),  # both: no single conclusion
        ("Mara Lind was born in Tallinn.", None),
        ("", None),
    ],
)
def test_stated_conclusion(text, stated):
    from veracity.prompts.parsers import stated_conclusion

    assert stated_conclusion(text) == stated
