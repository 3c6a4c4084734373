"""`POST /api/ground` on a running `veracity serve` (real HTTP requests): an answer and its documents in, every
sentence's verdict and quote out; bad documents and answers are 400s that say what is wrong."""

import httpx
import pytest
from conftest import write_rules

TOWER = "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. The tower is 330 metres tall."


@pytest.fixture(scope="module")
def site(server_factory):
    srv = server_factory(
        ["--model", write_rules(server_factory.base / "rules.json"), "--rate-limit", "0"], name="ground"
    )
    with httpx.Client(base_url=srv.url, timeout=60) as client:
        yield client


def test_an_answer_is_checked_against_the_documents_sent_with_it(site):
    answer = "The Eiffel Tower is in Paris. It is 500 metres tall."
    r = site.post("/api/ground", json={"answer": answer, "documents": [{"id": "wiki", "text": TOWER}]})
    assert r.status_code == 200, r.text
    body = r.json()
    paris, height = body["sentences"]
    assert paris["label"] == "supported" and paris["quote"]["document"] == "wiki"
    assert TOWER[paris["quote"]["start"] : paris["quote"]["end"]] == paris["quote"]["text"]
    assert height["label"] == "contradicted" and height["quote"]["text"] == "The tower is 330 metres tall."
    assert answer[slice(*height["span"])] == "It is 500 metres tall." and height["read_as"].startswith("The Eiffel")
    assert body["documents"] == [{"id": "wiki", "title": "", "url": None, "characters": len(TOWER)}]


@pytest.mark.parametrize(
    "payload, code, says",
    [
        ({"answer": "It is tall.", "documents": [{"text": "  "}]}, "invalid_documents", "no document has any text"),
        ({"answer": "   ", "documents": [{"text": TOWER}]}, "invalid_answer", "empty"),
        ({"answer": "x", "documents": [{"text": "y"}] * 51}, "invalid_documents", "at most 50"),
    ],
)
def test_bad_documents_and_answers_are_400s_that_say_why(site, payload, code, says):
    r = site.post("/api/ground", json=payload)
    assert r.status_code == 400 and r.json()["error"] == code and says in r.json()["detail"], r.text


def test_the_mcp_tool_grounds_an_answer_in_the_documents_given(tmp_path):
    import sys

    import anyio
    from conftest import server_env
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    client = Client(
        StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "veracity.cli",
                "mcp",
                "--model",
                write_rules(tmp_path / "rules.json"),
                "--db",
                str(tmp_path / "r.sqlite"),
            ],
            env=server_env(tmp_path),
            cwd=str(tmp_path),
        )
    )

    async def main():
        async with client as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            done = await c.call_tool("ground_answer", {"answer": "It is 500 metres tall.", "documents": [TOWER]})
            empty = await c.call_tool("ground_answer", {"answer": "It is tall.", "documents": []})
            return tools, done, empty

    tools, done, empty = anyio.run(main)
    assert "ground_answer" in tools and not done.is_error, done.content
    sentence = done.structured_content["sentences"][0]
    assert sentence["label"] == "contradicted" and sentence["quote"]["text"] == "The tower is 330 metres tall."
    line = done.content[0].text.splitlines()[1]
    assert line.startswith("1. ") and "Contradicted (0." in line and line.endswith(": It is 500 metres tall.")
    assert empty.is_error and "no document has any text" in empty.content[0].text
