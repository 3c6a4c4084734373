import json
from collections import Counter
from pathlib import Path

import pytest

from veracity.errors import UserError
from veracity.eval.datasets import DATASETS, load_dataset
from veracity.eval.datasets.feverous import clean_wiki_links

BENCHMARKS = Path(__file__).resolve().parents[2].parent / "shared" / "benchmarks"


def shared(rel: str) -> Path:
    path = BENCHMARKS / rel
    if not path.exists():
        pytest.skip(f"benchmark data not available ({path})")
    return path


# --------------------------------------------------------------------------- FEVEROUS-S


def test_feverous_gold_evidence_counts_and_clean_text():
    ds = load_dataset("feverous-s", shared("feverous_s/dev_600.json"))
    assert (ds.name, ds.setting, ds.metric) == ("feverous-s", "gold-evidence", "macro_f1")
    assert ds.labels == ("Supported", "Refuted")
    assert len(ds.items) == 600
    assert Counter(i.gold for i in ds.items) == {"Refuted": 311, "Supported": 289}
    assert len({i.id for i in ds.items}) == 600
    assert all(i.evidence for i in ds.items)
    for item in ds.items:
        for doc in item.evidence:
            assert "[[" not in doc.text and "]]" not in doc.text and "[[" not in doc.title
            assert doc.title and doc.text
    assert ds.knowledge_base is None
    assert ds.reference == {"qacheck": 59.47, "direct": 60.13, "cot": 61.05}
    first = ds.items[0].evidence[0]
    assert first.title == "Custodial account" and "(such as a bank account, a trust fund" in first.text


def test_feverous_pooled_knowledge_base_is_deduplicated():
    ds = load_dataset("feverous-s", shared("feverous_s/dev_600.json"), setting="pooled")
    kb = ds.knowledge_base
    assert kb and all(not i.evidence for i in ds.items)
    pairs = [(d.title, d.text) for d in kb]
    assert len(pairs) == len(set(pairs))
    assert len({d.id for d in kb}) == len(kb)
    gold = load_dataset("feverous-s", shared("feverous_s/dev_600.json"))
    every = {(d.title, d.text) for i in gold.items for d in i.evidence}
    assert set(pairs) == every
    assert len(kb) < sum(len(i.evidence) for i in gold.items)  # some sentences serve several claims


def test_feverous_folder_path_and_unknown_setting():
    ds = load_dataset("feverous-s", shared("."))
    assert len(ds.items) == 600
    with pytest.raises(UserError, match="closed-book"):
        load_dataset("feverous-s", shared("feverous_s/dev_600.json"), setting="closed-book")


def test_clean_wiki_links():
    assert clean_wiki_links("a [[Bank_account|bank account]] and [[X]]") == "a bank account and X"


# --------------------------------------------------------------------------- HoVer


@pytest.mark.parametrize("hops,word", [(2, "two"), (3, "three"), (4, "four")])
def test_hover_hops(hops, word):
    path = shared(f"hover/{word}_hop_100.json")
    ds = load_dataset("hover", path)
    assert ds.name == f"hover-{hops}" and ds.setting == "closed-book" and ds.metric == "macro_f1"
    assert len(ds.items) == 100
    assert {i.metadata["num_hops"] for i in ds.items} == {hops}
    assert {i.gold for i in ds.items} == {"Supported", "Refuted"}
    assert all(not i.evidence and i.metadata["supporting_facts"] for i in ds.items)
    assert set(ds.reference) == {"qacheck", "direct", "cot"}
    assert load_dataset(f"hover-{hops}", shared(".")).name == f"hover-{hops}"


def test_hover_wrong_hop_count_is_an_error():
    with pytest.raises(UserError, match="2-hop"):
        load_dataset("hover-3", shared("hover/two_hop_100.json"))


# --------------------------------------------------------------------------- AVeriTeC


def test_averitec_pooled():
    ds = load_dataset("averitec", shared("averitec/dev_200.json"))
    assert (ds.setting, ds.metric, len(ds.items)) == ("pooled", "accuracy", 200)
    assert (
        set(ds.labels)
        == {i.gold for i in ds.items}
        == {"Supported", "Refuted", "Not Enough Evidence", "Conflicting Evidence/Cherrypicking"}
    )
    assert ds.reference == {"defame": 74.0, "cot": 60.6}
    assert ds.label_map["Supported"] in ds.labels and ds.label_map["Refuted"] in ds.labels
    assert all(not i.evidence and i.metadata["questions"] for i in ds.items)
    assert ds.items[0].claim.date == "2020-08-26"  # written 26-8-2020 in the file
    kb = ds.knowledge_base
    assert kb and len({d.id for d in kb}) == len(kb)
    with_url = [d for d in kb if d.url]
    assert len(with_url) > 0.9 * len(kb)
    assert all(d.id == d.url and d.url.startswith("http") for d in with_url if "://" in d.url)
    assert all(d.title and d.text for d in kb)
    assert not any("No answer could be found" in d.text for d in kb)
    # the pool holds the evidence of every claim, not just one
    owners = {c for d in kb for c in d.metadata["claim_ids"]}
    assert len(owners) > 150


def test_averitec_other_settings():
    path = shared("averitec/dev_200.json")
    gold = load_dataset("averitec", path, setting="gold-evidence")
    assert gold.knowledge_base is None and sum(bool(i.evidence) for i in gold.items) > 150
    closed = load_dataset("averitec", path, setting="closed-book")
    assert closed.knowledge_base is None and all(not i.evidence for i in closed.items)


# --------------------------------------------------------------------------- VERITE


def test_verite_labels_and_image_urls():
    ds = load_dataset("verite", shared("verite/VERITE.csv"))
    assert ds.labels == ("true", "miscaptioned", "out-of-context")
    assert ds.metric == "accuracy" and len(ds.items) == 1001
    assert Counter(i.gold for i in ds.items) == {"true": 338, "miscaptioned": 338, "out-of-context": 325}
    assert all(i.claim.text and not i.claim.images for i in ds.items)
    assert all(i.metadata["image_url"].startswith("http") for i in ds.items)
    assert ds.label_map == {"Supported": "true", "Refuted": "miscaptioned"}


# --------------------------------------------------------------------------- MIRAGE


def test_mirage_all_tasks():
    ds = load_dataset("mirage", shared("mirage/benchmark_750.json"))
    assert (ds.name, ds.setting, ds.metric) == ("mirage", "multiple-choice", "accuracy")
    assert len(ds.items) == 750 and len({i.id for i in ds.items}) == 750
    assert Counter(i.metadata["task"] for i in ds.items) == {
        t: 150 for t in ("medqa", "medmcqa", "pubmedqa", "bioasq", "mmlu")
    }
    assert all(i.gold in i.metadata["options"] for i in ds.items)
    assert all(i.claim.metadata["options"] == i.metadata["options"] for i in ds.items)
    assert ds.reference["answer:fc-rag"] == 79.71


def test_mirage_one_task():
    ds = load_dataset("mirage:pubmedqa", shared("mirage/benchmark_750.json"))
    assert ds.name == "mirage:pubmedqa" and len(ds.items) == 150 and ds.labels == ("A", "B", "C")
    assert ds.reference == {"answer:plain": 60.60, "answer:rag": 70.80, "answer:fc-rag": 73.60}
    assert ds.items[0].metadata["options"] == {"A": "yes", "B": "no", "C": "maybe"}
    with pytest.raises(UserError, match="no task"):
        load_dataset("mirage:cardiology", shared("mirage/benchmark_750.json"))


# --------------------------------------------------------------------------- missing data, names


def test_missing_benchmark_file_says_where_the_data_lives(tmp_path):
    with pytest.raises(UserError, match=r"nothere\.json.*\.\./shared/benchmarks"):
        load_dataset("feverous-s", tmp_path / "nothere.json")


def test_unknown_dataset_lists_the_names(tmp_path):
    with pytest.raises(UserError, match="feverous-s"):
        load_dataset("fever", tmp_path)
    assert {"feverous-s", "hover", "averitec", "verite", "mirage", "jsonl", "csv"} <= set(DATASETS)


# --------------------------------------------------------------------------- the user's claims


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def test_jsonl_labels_evidence_and_fields(tmp_path):
    path = write_jsonl(
        tmp_path / "claims.jsonl",
        [
            {"id": "a", "claim": "The sky is green.", "label": "REFUTES", "evidence": "The sky is blue."},
            {
                "claim": "Water is wet.",
                "label": "true",
                "evidence": ["Water wets things.", "It is a liquid."],
                "date": "2024-01-02",
                "image": "http://x/y.png",
                "topic": "science",
            },
            "",
            {"claim": "It depends.", "label": "Not Enough Evidence"},
            {"claim": "Paris is in France.", "label": "SUPPORTED", "images": ["a.jpg", "b.jpg"]},
            {"claim": "Two plus two is five.", "label": "NOT_SUPPORTED"},
        ],
    )
    ds = load_dataset("jsonl", path)
    assert (ds.name, ds.setting, ds.metric) == ("jsonl", "user", "macro_f1")
    assert [i.gold for i in ds.items] == ["Refuted", "Supported", "Not Enough Evidence", "Supported", "Refuted"]
    assert ds.labels == ("Supported", "Refuted", "Not Enough Evidence")
    a, b = ds.items[0], ds.items[1]
    assert a.id == "a" and [d.text for d in a.evidence] == ["The sky is blue."]
    assert b.id == "2" and [d.text for d in b.evidence] == ["Water wets things.", "It is a liquid."]
    assert len({d.id for d in b.evidence}) == 2
    assert b.claim.date == "2024-01-02" and b.claim.images == ["http://x/y.png"]
    assert b.metadata["topic"] == "science"
    assert ds.items[3].claim.images == ["a.jpg", "b.jpg"]
    assert ds.items[2].evidence == []


def test_jsonl_malformed_line_names_its_number(tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", [{"claim": "ok", "label": "true"}, "", '{"claim": "oops", '])
    with pytest.raises(UserError, match=r"bad\.jsonl: line 3 is not valid JSON"):
        load_dataset("jsonl", path)


def test_jsonl_missing_claim_names_its_line(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"claim": "ok", "label": "true"}, {"text": "no claim", "label": "x"}])
    with pytest.raises(UserError, match=r"line 2 has no 'claim'"):
        load_dataset("jsonl", path)


def test_jsonl_duplicate_id_and_partial_labels(tmp_path):
    dup = write_jsonl(tmp_path / "d.jsonl", [{"id": 1, "claim": "a"}, {"id": "1", "claim": "b"}])
    with pytest.raises(UserError, match="line 2: id '1' is already used"):
        load_dataset("jsonl", dup)
    partial = write_jsonl(tmp_path / "p.jsonl", [{"claim": "a", "label": "true"}, {"claim": "b"}])
    with pytest.raises(UserError, match="line 2 has no 'label'"):
        load_dataset("jsonl", partial)


def test_unlabelled_claims_load_without_a_label_set(tmp_path):
    ds = load_dataset("jsonl", write_jsonl(tmp_path / "u.jsonl", [{"claim": "a"}, {"claim": "b"}]))
    assert ds.labels == () and [i.gold for i in ds.items] == ["", ""]


@pytest.mark.parametrize("fmt,text", [("jsonl", ""), ("jsonl", "\n  \n"), ("csv", ""), ("csv", "claim,label\n")])
def test_empty_file_is_an_error(tmp_path, fmt, text):
    path = tmp_path / f"empty.{fmt}"
    path.write_text(text)
    with pytest.raises(UserError, match="empty"):
        load_dataset(fmt, path)


def test_missing_user_file(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        load_dataset("csv", tmp_path / "none.csv")


def test_csv_claims(tmp_path):
    path = tmp_path / "claims.csv"
    path.write_text(
        "id,claim,label,evidence,images,date\n"
        'x1,"Paris is the capital of France.",supports,"Paris is France\'s capital.",,2023-05-01\n'
        'x2,"The moon is cheese.",False,"[""The moon is rock."", ""Apollo brought rock back.""]",a.jpg;b.jpg,\n'
        'x3,"A claim, with a comma",Mixture,,,\n'
    )
    ds = load_dataset("csv", path)
    assert ds.name == "csv" and [i.id for i in ds.items] == ["x1", "x2", "x3"]
    assert [i.gold for i in ds.items] == ["Supported", "Refuted", "Mixture"]
    assert ds.labels == ("Supported", "Refuted", "Mixture")
    assert [d.text for d in ds.items[0].evidence] == ["Paris is France's capital."]
    assert [d.text for d in ds.items[1].evidence] == ["The moon is rock.", "Apollo brought rock back."]
    assert ds.items[1].claim.images == ["a.jpg", "b.jpg"]
    assert ds.items[0].claim.date == "2023-05-01" and ds.items[1].claim.date is None
    assert ds.items[2].claim.text == "A claim, with a comma" and ds.items[2].evidence == []


def test_csv_errors_name_the_line(tmp_path):
    no_col = tmp_path / "h.csv"
    no_col.write_text("text,label\nsomething,true\n")
    with pytest.raises(UserError, match="no 'claim' column"):
        load_dataset("csv", no_col)
    extra = tmp_path / "e.csv"
    extra.write_text('claim,label\n"multi\nline claim",true\nok,true,surplus\n')
    with pytest.raises(UserError, match=r"e\.csv: line 4 has 3 fields"):
        load_dataset("csv", extra)
    blank = tmp_path / "b.csv"
    blank.write_text("claim,label\nfine,true\n  ,false\n")
    with pytest.raises(UserError, match="line 3: 'claim' must be non-empty"):
        load_dataset("csv", blank)


@pytest.mark.parametrize("label", ["true", "Refuted"])
def test_claims_all_with_one_label_are_still_a_two_label_task(tmp_path, label):
    """A file whose claims are all supported (or all refuted) is checked with both labels to choose from: the
    evidence-only pipelines decide between them instead of failing on a one-label set."""
    from veracity.check import run_check
    from veracity.config import load_config
    from veracity.llm import Model
    from veracity.llm.scripted import ScriptedBackend
    from veracity.registry import get_pipeline
    from veracity.retrieval import Index

    ds = load_dataset(
        "jsonl",
        write_jsonl(
            tmp_path / "one.jsonl",
            [
                {
                    "claim": "The Danube flows through Vienna.",
                    "label": label,
                    "evidence": ["The Danube flows through Vienna and Budapest."],
                }
            ],
        ),
    )
    assert ds.labels == ("Supported", "Refuted")
    item = ds.items[0]
    retriever = Index.from_documents(item.evidence).retriever("bm25")
    config = load_config(overrides={"cache": False}, env={})
    for name in ("lexical", "verifier"):
        res = run_check(
            item.claim,
            get_pipeline(name, config),
            Model(ScriptedBackend([])),
            config,
            retriever=retriever,
            labels=ds.labels,
        )
        assert res.verdict.label in ds.labels


def test_claims_all_with_one_other_label_are_refused_with_the_reason(tmp_path):
    path = write_jsonl(
        tmp_path / "acc.jsonl",
        [
            {"claim": "The Danube flows through Vienna.", "label": "Accurate"},
            {"claim": "The Rhine flows through Basel.", "label": "Accurate"},
        ],
    )
    with pytest.raises(UserError, match="every labelled claim is 'Accurate': a pipeline needs two labels or more"):
        load_dataset("jsonl", path)
