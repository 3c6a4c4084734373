"""Table tests of DEFAME's parsers (defame/parsing.py and the readers in defame/prompts.py).

Rows marked `# 135M` are what the embedded SmolLM2-135M wrote for that stage's prompt (after the spec's stop
strings); the others are the odd shapes small models produce.
"""

from types import SimpleNamespace

import pytest

from veracity.defame.parsing import clean_text, excerpt, grounded, parse_summary
from veracity.defame.prompts import DEVELOP, JUDGE, JUSTIFY, SUMMARIZE, read_summary, written_query

TOOLS = {
    "web_search": SimpleNamespace(takes_image=False),
    "image_search": SimpleNamespace(takes_image=False),
    "reverse_search": SimpleNamespace(takes_image=True),
}
SOURCE = "The Eiffel Tower opened its summer season in Paris on 30 May 2023. Visitors climbed to the top floor."
CLAIM = "The Eiffel Tower was dismantled and moved to Rome in 2023."


# -------------------------------------------------------------------------------------------- the plan


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Eiffel Tower", "Eiffel Tower"),  # 135M
        ("query", ""),
        ("Query", ""),  # 135M: the placeholder of the tool list, copied
        ("\u201cEiffel Tower\u201d", "Eiffel Tower"),
        ("'Eiffel Tower Berlin'", "Eiffel Tower Berlin"),
        ("  Eiffel\n Tower ", "Eiffel Tower"),
        ("", ""),
        ("  ", ""),
    ],
)
def test_written_query(text, expected):
    assert written_query(text) == expected


# -------------------------------------------------------------------------------------------- free text stages


@pytest.mark.parametrize(
    "text,limit,expected",
    [
        # 135M, develop and justify
        (" The Eiffel Tower is located in Paris.", 800, "The Eiffel Tower is located in Paris."),
        (
            " The claim is incomplete. The evidence is incomplete.",
            800,
            "The claim is incomplete. The evidence is incomplete.",
        ),
        (
            " The evidence provided by the court in the case is that Barack Obama was born in Hawaii.",
            1200,
            "The evidence provided by the court in the case is that Barack Obama was born in Hawaii.",
        ),
        # 135M, the judge's key findings: the same sentence over and over is cut at the first repeat
        (
            "\n- The Great Wall of China is visible from the Moon with the naked eye.\n- The Great Wall of China is visible "
            "from the Moon with the naked eye.\n- The Great Wall of China is visible from the Moon wi",
            600,
            "The Great Wall of China is visible from the Moon with the naked eye.",
        ),
        # 135M, the judge repeating the prompt's label list: kept as the findings (the label is decided apart)
        (
            "\n- Supported: the evidence confirms the claim\n- Refuted: the evidence contradicts the claim",
            600,
            "Supported: the evidence confirms the claim Refuted: the evidence contradicts the claim",
        ),
        # the model repeats the cue, in bold too, or starts the next block
        (" Summary: The tower opened in 1889.", 80, "The tower opened in 1889."),
        ("**Key findings:** The tower is in Paris.", 80, "The tower is in Paris."),
        (
            " Justification: The tower stayed in Paris ([Wiki](https://x.org)).",
            80,
            "The tower stayed in Paris ([Wiki](https://x.org)).",
        ),
        (" The page says the tower is 330 m tall. Evidence: - something", 80, "The page says the tower is 330 m tall."),
        ("Record:\nClaim: x", 80, ""),
        (" It is in Paris.\n\nRecord:\nClaim: The tower is in Rome.", 80, "It is in Paris."),
        (" It opened in 1889; it is 330 m tall; it opened in 1889.", 80, "It opened in 1889; it is 330 m tall;"),
        ("- The tower is 330 m tall.", 80, "The tower is 330 m tall."),
        ("", 80, ""),
        ("\n\n", 80, ""),
        ("word " * 50, 40, "word word word word word word word word\u2026"),
    ],
)
def test_clean_text(text, limit, expected):
    assert clean_text(text, limit) == expected


def test_the_free_text_stages_read_with_their_limits():
    long = "The tower is tall and old and made of iron. " + "x" * 2000
    assert len(DEVELOP.parser(long)) == 800 and len(JUDGE.parser(long)) == 600 and len(JUSTIFY.parser(long)) == 1200


@pytest.mark.parametrize(
    "text,expected",
    [
        (" NONE", None),  # 135M
        ("NONE.", None),
        ("none", None),
        (" N/A", None),
        (" Irrelevant.", None),
        (" Not relevant to the claim.", None),
        (" None of the results mention it.", None),
        ("", None),
        ("\n\nRecord:", None),
        (" Summary: The tower opened in 1889.", "The tower opened in 1889."),
        (" Nonetheless the tower stayed in Paris.", "Nonetheless the tower stayed in Paris."),
    ],
)
def test_parse_summary(text, expected):
    assert parse_summary(text, 400) == expected


@pytest.mark.parametrize(
    "text,summary,is_grounded",
    [
        (" NONE", None, True),  # 135M: nothing to summarize is a usable answer
        (
            " The tower opened its summer season in Paris on 30 May 2023.",
            "The tower opened its summer season in Paris on 30 May 2023.",
            True,
        ),
        # the claim written again, or something the source does not say
        (" " + CLAIM, CLAIM, False),
        (" The tower was painted green by Napoleon.", "The tower was painted green by Napoleon.", False),
        # grounding is lexical: the claim's own words ("Rome") are not counted against a summary
        (
            " Visitors climbed to the top floor of the Eiffel Tower in Rome.",
            "Visitors climbed to the top floor of the Eiffel Tower in Rome.",
            True,
        ),
    ],
)
def test_read_summary_marks_a_summary_not_drawn_from_the_source(text, summary, is_grounded):
    read = read_summary(text, SOURCE, CLAIM)
    assert (read.text, read.grounded) == (summary, is_grounded)
    assert SUMMARIZE.usable(read) is is_grounded


@pytest.mark.parametrize(
    "summary,is_grounded",
    [
        ("The Eiffel Tower was moved to Rome.", False),  # nothing beyond the claim's words
        ("It opened its summer season on 30 May.", True),
        ("Napoleon painted it green.", False),
        ("", False),
    ],
)
def test_grounded(summary, is_grounded):
    assert grounded(summary, SOURCE, CLAIM) is is_grounded


def test_excerpt_quotes_the_source_sentences_closest_to_the_claim():
    assert excerpt(SOURCE, CLAIM, 400) == SOURCE
    assert excerpt(SOURCE, CLAIM, 70) == "The Eiffel Tower opened its summer season in Paris on 30 May 2023."
    assert excerpt("", CLAIM, 100) == ""
    assert excerpt("x " * 300, CLAIM, 50).endswith("\u2026") and len(excerpt("x " * 300, CLAIM, 50)) == 50
