"""The scripted worlds of scripted_snapshots.py: one tiny corpus (`DOCS`, indexed by `build_index`) for every
system, a claim image (`claim_image`), and per pipeline family the fixed claims or questions with the scripted
model's rules that answer its prompts (`QACHECK_CASES`, `DIRECT_CASES`, `COT_CASES`, `DEFAME_CASES`, `LEAF_CASES`,
`ANSWER_CHECKS`; LEAF's prompts all answered by `LEAF_RULES`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# -- the world: one index for every system --------------------------------------------------------------------

DOCS = [
    ("kb", "Kestrel Bay", "Kestrel Bay is a 1998 novel written by Mara Lind.", None, None),
    ("ml", "Mara Lind", "Mara Lind is an Estonian novelist, born in Tallinn in 1961.", None, None),
    (
        "ob",
        "Orrin Bridge",
        "The Orrin Bridge is a stone bridge in Tallinn, Estonia, finished in 1884.",
        "https://example.org/orrin",
        "2020-03-01",
    ),
    (
        "ob-2023",
        "Orrin Bridge repairs 2023",
        "In 2023 the Orrin Bridge in Tallinn was closed for repairs of its stone arches and reopened in October.",
        "https://example.org/orrin-2023",
        "2023-10-12",
    ),
    (
        "riga",
        "Riga bridges",
        "Riga has several bridges over the Daugava; none of them was moved from Tallinn.",
        "https://example.net/riga",
        None,
    ),
    (
        "onsager",
        "Lars Onsager",
        "Lars Onsager, born in 1903 in Kristiania, won the 1968 Nobel Prize in Chemistry.",
        None,
        None,
    ),
    (
        "sardines",
        "Sardines",
        "Sardines are small oily fish that live in schools near the Orrin Bridge rumour pages.",
        "https://fish.example.com/sardines",
        None,
    ),
    (
        "cts-symptoms",
        "Carpal tunnel symptoms",
        "Numbness and tingling of the thumb, index and middle fingers, often "
        "worse at night, are the typical symptoms of carpal tunnel syndrome.",
        None,
        None,
    ),
    (
        "cts-cause",
        "Carpal tunnel syndrome",
        "Carpal tunnel syndrome is an entrapment neuropathy: the median nerve is "
        "compressed as it passes through the carpal tunnel at the wrist.",
        None,
        None,
    ),
    (
        "cts-release",
        "Carpal tunnel release",
        "Cutting the transverse carpal ligament frees the median nerve when "
        "splints and steroid injections do not help.",
        None,
        None,
    ),
    (
        "lithium",
        "Lithium and the kidney",
        "Long-term lithium therapy is the most common drug cause of nephrogenic "
        "diabetes insipidus, with polyuria and thirst.",
        None,
        None,
    ),
]

# -- QACheck ---------------------------------------------------------------------------------------------------

VERIFIER = r"Yes or no\?\nPrediction =$"
FIRST_Q = r"first ask a simple question:\nQuestion =$"
FOLLOW_Q = r"Question (\d+) =$"
RECITE = r"Relevant passage =$"
READER = r"Passages:\n(?:(?!-{8}).)*Answer =$"
CLOSED = r"-{8}\nQuestion = [^\n]*\nAnswer =$"
VALIDATOR = r"useful for verifying the claim\?\nThe answer:$"
REASONER = r"Is this claim true or false\?\nAnswer:$"
LABEL = r"final answer is:$"
REMINDER = r"Reply with that word only\.\n$"

Q_CLAIM_1 = "The author of the novel Kestrel Bay was born in the same city where the Orrin Bridge stands."
Q_RULES_1 = [
    {"match": REMINDER, "reply": "Unsure"},
    {"match": VERIFIER, "reply": ["No, we cannot know.", "Yes, we can know."]},
    {"match": FIRST_Q, "reply": " Who wrote the novel Kestrel Bay?"},
    {"match": FOLLOW_Q, "reply": " Where was Mara Lind born?"},
    {
        "match": RECITE,
        "reply": [
            " Kestrel Bay is a 1998 novel by the writer Mara Lind.",
            " Mara Lind was born in Tallinn, the city of the Orrin Bridge.",
        ],
    },
    {"match": READER, "reply": [" Mara Lind", " Tallinn."]},
    {
        "match": CLOSED,
        "reply": [
            " Mara Lind\nEvidence = Kestrel Bay is a novel by Mara Lind.",
            " Tallinn\nEvidence = Mara Lind was born in Tallinn.",
        ],
    },
    {"match": VALIDATOR, "reply": " Yes"},
    {
        "match": REASONER,
        "reply": "\nKestrel Bay was written by Mara Lind.\nMara Lind was born in Tallinn, where the bridge is.\n",
    },
    {"match": LABEL, "reply": " True."},
]

# an unusable verifier answer, a repeated question, a discarded pair, a stop by the verifier
Q_CLAIM_2 = "Lars Onsager won the Nobel prize when he was 30 years old."
Q_RULES_2 = [
    {"match": REMINDER, "reply": "Unsure"},
    {"match": VERIFIER, "reply": ["Perhaps.", "No, we cannot know.", "No, we cannot know.", "Yes, we can know."]},
    {"match": FIRST_Q, "reply": " Who won the Nobel prize in chemistry in 1968?"},
    {
        "match": FOLLOW_Q,
        "reply": [
            " Who won the Nobel prize in chemistry in 1968?",
            " When was Lars Onsager born?",
            " What is the capital of Norway?",
        ],
    },
    {
        "match": RECITE,
        "reply": [
            " Lars Onsager won the 1968 Nobel Prize in Chemistry.",
            " Lars Onsager was born on 27 November 1903 in Kristiania, Norway.",
            " Oslo is the capital of Norway.",
        ],
    },
    {"match": READER, "reply": [" Lars Onsager", " 1903", " Oslo"]},
    {
        "match": CLOSED,
        "reply": [
            " Lars Onsager\nEvidence = Onsager won the 1968 Nobel Prize in Chemistry.",
            " 1903\nEvidence = Onsager was born in 1903.",
            " Oslo\nEvidence = Oslo is the capital.",
        ],
    },
    {"match": VALIDATOR, "reply": [" Yes", " Yes", " No"]},
    {"match": REASONER, "reply": "\nOnsager was born in 1903 and won in 1968, at 64, not 30.\n"},
    {"match": LABEL, "reply": " False."},
]

# no question at all, and a reasoner whose label is unusable
Q_CLAIM_3 = "The Orrin Bridge is older than the Eiffel Tower."
Q_RULES_3 = [
    {"match": REMINDER, "reply": "It is hard to say"},
    {"match": FIRST_Q, "reply": "\n\n"},
    {"match": REASONER, "reply": "\nI cannot tell.\n"},
    {"match": LABEL, "reply": "Perhaps, who knows"},
]

QACHECK_CASES = [("c1", Q_CLAIM_1, Q_RULES_1), ("c2", Q_CLAIM_2, Q_RULES_2), ("c3", Q_CLAIM_3, Q_RULES_3)]

# -- baselines -------------------------------------------------------------------------------------------------

DIRECT_CASES = [
    ("c1", Q_CLAIM_1, [{"match": r"true or false\?\nAnswer:$", "reply": " True"}]),
    (
        "c2",
        Q_CLAIM_2,
        [
            {"match": REMINDER, "reply": "Unsure"},
            {"match": r"true or false\?\nAnswer:$", "reply": " It is hard to say"},
        ],
    ),
]
COT_CASES = [
    (
        "c1",
        Q_CLAIM_1,
        [
            {
                "match": r"step by step\.\nAnswer:$",
                "reply": "\nKestrel Bay is by Mara Lind, born in Tallinn, where the Orrin Bridge is.\n",
            },
            {"match": LABEL, "reply": " True"},
        ],
    ),
    (
        "c2",
        Q_CLAIM_2,
        [
            {"match": r"step by step\.\nAnswer:$", "reply": "\nOnsager won in 1968, aged 64.\n"},
            {"match": LABEL, "reply": " False"},
        ],
    ),
]

# -- DEFAME ----------------------------------------------------------------------------------------------------

D_CLAIM_1 = "The Orrin Bridge was moved from Tallinn to Riga in 2023."
D_CLAIM_2 = "This photo shows the Orrin Bridge in Tallinn in May 2024."
PLAN = r"Executed actions: [^\n]*\nActions:$"


def defame_rules(plan: list[str] | str, verdicts: list[str] | str) -> list[dict[str, Any]]:
    return [
        {"match": REMINDER, "reply": "Refuted"},
        {"match": r"Actions:\n$", "reply": "web_search"},  # a scored tool choice after an unusable plan
        {"match": r'web_search\("$', "reply": "Orrin Bridge Riga"},
        {"match": PLAN, "reply": plan},
        {"match": r"<result>[^<]*none of them was moved[^<]*</result>\nSummary:$", "reply": "NONE"},
        {
            "match": r"<result>[^<]*stone bridge in Tallinn[^<]*</result>\nSummary:$",
            "reply": "The Orrin Bridge is a stone bridge in Tallinn, Estonia, finished in 1884.",
        },
        {
            "match": r"<result>[^<]*closed for repairs[^<]*</result>\nSummary:$",
            "reply": "In 2023 the bridge was closed for repairs in Tallinn and reopened in October.",
        },
        {"match": r"Summary:$", "reply": "The claim says the bridge went to Riga."},  # not drawn from the source
        {"match": r"Elaboration:$", "reply": "The bridge was repaired in Tallinn in 2023; nothing says it moved."},
        {"match": r"Key findings:$", "reply": "The Orrin Bridge stayed in Tallinn in 2023."},
        {"match": r"Verdict:$", "reply": verdicts},
        {
            "match": r"Justification:$",
            "reply": "The bridge was repaired in place in Tallinn in 2023 "
            "([Orrin Bridge repairs 2023](https://example.org/orrin-2023)).",
        },
    ]


DEFAME_CASES = [
    # two rounds: not enough information, then a new search and a verdict
    (
        "c1",
        D_CLAIM_1,
        {},
        defame_rules(
            ['web_search("Orrin Bridge Tallinn")', 'web_search("Orrin Bridge Riga 2023")'],
            ["Not Enough Information", "Refuted"],
        ),
    ),
    # a claim image and a date; the plan names an unknown tool and the metadata tool
    (
        "c2",
        D_CLAIM_2,
        {"image": True, "date": "2024-05-15"},
        defame_rules('fly_to("Tallinn")\nimage_metadata(<image:1>)', "Refuted"),
    ),
    # a plan with no usable action: the tool is scored, the query written
    ("c3", D_CLAIM_1, {}, defame_rules("I would look it up.", "Refuted")),
]

# -- LEAF ------------------------------------------------------------------------------------------------------

Q_CTS = "Is carpal tunnel syndrome a type of nerve entrapment?"
OPT_CTS = {"A": "yes", "B": "no"}
Q_LI = "Which disorder does long-term lithium therapy most often cause?"
OPT_LI = {"A": "Central diabetes insipidus", "B": "Nephrogenic diabetes insipidus", "C": "Hypothyroid coma"}
PLAIN_CTS = (
    "Carpal tunnel syndrome causes numbness and tingling in the thumb and index finger. "
    "It is a disorder of the tendons rather than of a nerve. So the answer is B."
)
FC_CTS = "Carpal tunnel syndrome is an entrapment neuropathy of the median nerve at the wrist. So the answer is A."
RAG_CTS = "The documents say the median nerve is compressed in the carpal tunnel. The answer is A."
PLAIN_LI = "Long-term lithium therapy is the most common drug cause of nephrogenic diabetes insipidus. The answer is B."

LEAF_RULES = [
    {
        "match": "STATEMENT:\nCarpal tunnel syndrome causes numbness[^\n]*\nSearch query:$",
        "reply": " numbness tingling thumb index finger night",
    },
    {
        "match": "STATEMENT:\nIt is a disorder of the tendons[^\n]*\nSearch query:$",
        "reply": " carpal tunnel median nerve compressed entrapment",
    },
    {"match": "STATEMENT:\nSo the answer is B.\nSearch query:$", "reply": " transverse carpal ligament splints"},
    {
        "match": "STATEMENT:\nLong-term lithium[^\n]*\nSearch query:$",
        "reply": " lithium nephrogenic diabetes insipidus",
    },
    {"match": "STATEMENT:\nThe answer is B.\nSearch query:$", "reply": "\n\n"},  # no query: the sentence is searched
    {"match": "Search query:$", "reply": " carpal tunnel syndrome entrapment neuropathy"},
    {"match": "Reasoning:$", "reply": " The passage addresses this statement."},
    {
        "match": "STATEMENT:\n(It is a disorder of the tendons|So the answer is B)[^\n]*\nReasoning:[^\n]*\n"
        "Final answer:$",
        "reply": " Not Supported",
    },
    {"match": "STATEMENT:\nThe answer is B.\nReasoning:[^\n]*\nFinal answer:$", "reply": " I cannot tell."},
    {"match": "Reply with (that|one of)[^\n]*\n$", "reply": " Maybe"},
    {"match": "Final answer:$", "reply": " Supported"},
    {"match": "^Pick the correct answer.*ANSWER:$", "reply": FC_CTS},
    {"match": "documents that may be relevant.*ANSWER:$", "reply": RAG_CTS},
    {"match": "lithium.*ANSWER:$", "reply": PLAIN_LI},
    {"match": "ANSWER:$", "reply": PLAIN_CTS},
    {"match": "answer is A.\n\nOf the options A or B, the one this answer chooses is option$", "reply": " A"},
    {"match": "chooses is option$", "reply": " B"},
]
LEAF_CASES = [("c1", Q_CTS, OPT_CTS), ("c2", Q_LI, OPT_LI)]
ANSWER_CHECKS = [("c1", Q_CTS, PLAIN_CTS), ("c2", Q_LI, PLAIN_LI)]

# -- on disk -------------------------------------------------------------------------------------------------------


def build_index(tmp: Path) -> None:
    from veracity.retrieval.documents import Document
    from veracity.retrieval.index import Index

    docs = [Document(i, title, text, url=url, date=date) for i, title, text, url, date in DOCS]
    Index.build(docs, tmp / "index")


def claim_image(tmp: Path) -> Path:
    from PIL import Image

    path = tmp / "photo.png"
    Image.new("RGB", (64, 48), (200, 30, 30)).save(path)
    return path
