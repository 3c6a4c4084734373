"""Scripted worlds that tests in several folders share: the LEAF medical corpus with its scripted answers
and rater (tests/leaf, tests/server, tests/test_report_safety.py), and one DEFAME round over an uploaded
image (tests/server)."""

from __future__ import annotations

import io
import re

from veracity.config import load_config
from veracity.retrieval import Document

# ------------------------------------------------------------------------------------ LEAF: the world

DOCS = [
    Document(
        id="cts-symptoms",
        title="Carpal tunnel symptoms",
        text="Numbness and tingling of the thumb, index and middle fingers, often worse at night, "
        "are the typical symptoms of carpal tunnel syndrome.",
    ),
    Document(
        id="cts-cause",
        title="Carpal tunnel syndrome",
        text="Carpal tunnel syndrome is an entrapment neuropathy: the median nerve is compressed as it "
        "passes through the carpal tunnel at the wrist.",
    ),
    Document(
        id="cts-release",
        title="Carpal tunnel release",
        text="Cutting the transverse carpal ligament frees the median nerve when splints and steroid "
        "injections do not help.",
    ),
    Document(
        id="cubital",
        title="Cubital tunnel syndrome",
        text="In cubital tunnel syndrome the ulnar nerve is compressed at the elbow, which makes the ring "
        "and little fingers numb.",
    ),
    Document(
        id="lithium",
        title="Lithium and the kidney",
        text="Long-term lithium therapy is the most common drug cause of nephrogenic diabetes insipidus, "
        "with polyuria and thirst.",
    ),
    Document(
        id="scfe",
        title="Slipped capital femoral epiphysis",
        text="Slipped capital femoral epiphysis affects obese adolescents, presents with hip or knee pain "
        "and a limp, and is treated by surgical pinning in situ.",
    ),
]

Q_CTS = "Is carpal tunnel syndrome a type of nerve entrapment?"
OPT_CTS = {"A": "yes", "B": "no"}
Q_LI = "Which disorder does long-term lithium therapy most often cause?"
OPT_LI = {"A": "Central diabetes insipidus", "B": "Nephrogenic diabetes insipidus", "C": "Hypothyroid coma"}

# the plain answer: right about symptoms, wrong about the cause, wrong letter
PLAIN_CTS = (
    "Carpal tunnel syndrome causes numbness and tingling in the thumb and index finger. "
    "It is a disorder of the tendons rather than of a nerve. So the answer is B."
)
# the answer written with the fact-check's knowledge
FC_CTS = "Carpal tunnel syndrome is an entrapment neuropathy of the median nerve at the wrist. So the answer is A."
RAG_CTS = "The documents say the median nerve is compressed in the carpal tunnel. The answer is A."
PLAIN_LI = "Long-term lithium therapy is the most common drug cause of nephrogenic diabetes insipidus. The answer is B."


# sentence -> the query the rater writes for it (the second and third lean on the question's words)
QUERIES = {
    "Carpal tunnel syndrome causes numbness and tingling in the thumb and index finger.": "numbness tingling thumb index finger night",
    "It is a disorder of the tendons rather than of a nerve.": "carpal tunnel median nerve compressed entrapment",
    "So the answer is B.": "transverse carpal ligament splints",
    "Carpal tunnel syndrome is an entrapment neuropathy of the median nerve at the wrist.": "entrapment neuropathy median nerve wrist",
    "So the answer is A.": "carpal tunnel syndrome entrapment neuropathy",
    "The documents say the median nerve is compressed in the carpal tunnel.": "median nerve compressed carpal tunnel",
    "The answer is A.": "carpal tunnel entrapment",
    "Long-term lithium therapy is the most common drug cause of nephrogenic diabetes insipidus.": "lithium nephrogenic diabetes insipidus",
    "The answer is B.": "lithium polyuria thirst kidney",
}
NOT_SUPPORTED = {"It is a disorder of the tendons rather than of a nerve.", "So the answer is B."}

QUERY = r"Search query:$"
REASON = r"STATEMENT:\n[^\n]*\nReasoning:$"
DECIDE = r"Final answer:$"
ANSWER = r"ANSWER:$"
LETTER = r"chooses is option$"


def last(prompt, name):
    """The value of the last `NAME:` block of a prompt (up to the next line)."""
    return prompt.rsplit(f"{name}:\n", 1)[1].split("\n", 1)[0]


def statement(req):
    return last(req.messages[-1][1], "STATEMENT")


def write_query(req):
    return " " + QUERIES.get(statement(req), "carpal tunnel")


def rate(req):
    return " Not Supported" if statement(req) in NOT_SUPPORTED else " Supported"


def answer(req):
    prompt = req.messages[-1][1]
    if prompt.startswith("Pick the correct answer"):  # Fact-Check-Then-RAG
        return FC_CTS
    if "documents that may be relevant" in prompt:
        return RAG_CTS
    return PLAIN_LI if "lithium" in prompt else PLAIN_CTS


def letter(req):
    said = re.findall(r"answer is ([A-E])", req.messages[-1][1].rsplit("ANSWER:\n", 1)[1])
    return f" {said[-1]}" if said else " I cannot tell."


RULES = [
    (QUERY, write_query),
    (REASON, " The passage addresses this statement."),
    (DECIDE, rate),
    (ANSWER, answer),
    (LETTER, letter),
]


def config(**over):
    return load_config(overrides={"leaf.top_k": 1, **over}, env={})


CLI_RULES = {
    "rules": [
        {
            "match": "STATEMENT:\nCarpal tunnel syndrome causes numbness[^\n]*\nSearch query:$",
            "reply": " numbness tingling thumb index finger night",
        },
        {
            "match": "STATEMENT:\nIt is a disorder of the tendons[^\n]*\nSearch query:$",
            "reply": " carpal tunnel median nerve compressed entrapment",
        },
        {"match": "STATEMENT:\nSo the answer is B.\nSearch query:$", "reply": " transverse carpal ligament splints"},
        {"match": "Search query:$", "reply": " carpal tunnel syndrome entrapment neuropathy"},
        {"match": "Reasoning:$", "reply": " The passage addresses this statement."},
        {
            "match": "STATEMENT:\n(It is a disorder of the tendons|So the answer is B)[^\n]*\nReasoning:[^\n]*\nFinal answer:$",
            "reply": " Not Supported",
        },
        {"match": "Final answer:$", "reply": " Supported"},
        {"match": "^Pick the correct answer.*ANSWER:$", "reply": FC_CTS},
        {"match": "ANSWER:$", "reply": PLAIN_CTS},
        {"match": "answer is A.\n\nOf the options A or B, the one this answer chooses is option$", "reply": " A"},
        {"match": "chooses is option$", "reply": " B"},
    ]
}


# ------------------------------------------------------------------------------------ DEFAME: one image round

# One round: the planner reads the image's metadata, the summarizer keeps it, the judge refutes.
DEFAME_RULES = {
    "rules": [
        {"match": "Next action:\\s*$", "reply": ["image_metadata", "stop"]},  # a choice of tool, then of stopping
        {"match": "Next action:\\s*image_metadata\\($", "reply": "<image:1>"},  # which image, where there are two
        {"match": "Summary:$", "reply": "A PNG image with no EXIF metadata, often stripped by social media."},
        {"match": "Elaboration:$", "reply": "Nothing in the file ties it to Tallinn or to May 2024."},
        {"match": "Key findings:$", "reply": "The image carries no evidence for the place or the date."},
        {"match": "Verdict:$", "reply": "Refuted"},
        {
            "match": "Justification:$",
            "reply": "The image gives no support to the claim ([Orrin Bridge facts](https://example.org/orrin)).",
        },
    ]
}


def png_bytes(size=(48, 32), color="teal") -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def jpeg_bytes(size=(40, 40), color="orange") -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "JPEG")
    return buf.getvalue()


# ------------------------------------------------------------------------------------ text check: a short article

TEXT_DOCS = [
    Document(
        id="curie",
        title="Marie Curie",
        text="Marie Curie was a Polish and naturalised-French physicist and chemist. She was born in Warsaw. "
        "She won the Nobel Prize in Physics in 1903.",
    ),
    Document(
        id="danube",
        title="Danube",
        text="The Danube is the second-longest river in Europe. It flows through Vienna, Bratislava, Budapest "
        "and Belgrade.",
    ),
]

# five sentences: two claims the index supports, a question (not checkable), one the index contradicts, and a
# pronoun nothing resolves (ambiguous)
ARTICLE = (
    "Marie Curie was born in Warsaw. She won the Nobel Prize in Physics in 1903. Do you like rivers? "
    "The Danube is the longest river in Asia. He lost it."
)
BORN = "Marie Curie was born in Warsaw."
NOBEL = "Marie Curie won the Nobel Prize in Physics in 1903."
DANUBE = "The Danube is the longest river in Asia."

_GIVEN = r"\nGiven the evidence, is this claim true or false\?\nAnswer:$"
# the direct baseline over the index (its evidence prompt): one decision per claim
TEXT_RULES = {
    "rules": [
        {"match": "Claim = " + re.escape(BORN) + _GIVEN, "reply": " True"},
        {"match": "Claim = " + re.escape(NOBEL) + _GIVEN, "reply": " True"},
        {"match": "Claim = " + re.escape(DANUBE) + _GIVEN, "reply": " False"},
    ]
}
