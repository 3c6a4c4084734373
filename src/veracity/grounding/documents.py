"""The documents an answer is checked against: given to the library call (texts, or mappings with an id), or found
in a chat completion request (the proxy's `--evidence request`).

In a request, these are read as documents, in order:
- every `system` (and `developer`) message: the instructions and context a RAG app puts there;
- every `tool` message (and the legacy `function` role): the results of retrieval and other tools an agent called;
- every `user` message but the last: earlier turns that pasted documents;
- the last `user` message too, unless it is short (under MIN_QUESTION_DOCUMENT characters): a question on its own
  is not a document, but a user message that carries the documents with its question is;
- and any text part a client marks itself: a message (or a content part) with `"veracity": "document"`, whatever its
  role, is read; one marked `"veracity": "ignore"` is not (the OpenAI API ignores fields it does not know, and
  clients that pass them through can use them to say exactly what the documents are).
Assistant messages are never read: what the model said before is not evidence for what it says now.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import UserError

#: a last user message shorter than this is taken for the question alone, not a document
MIN_QUESTION_DOCUMENT = 400
DOCUMENT_ROLES = ("system", "developer", "tool", "function")
MARK = "veracity"  # the key a client marks a message or a content part with: "document" or "ignore"


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    title: str = ""
    url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "url": self.url, "characters": len(self.text)}


def as_documents(documents: Iterable[Any]) -> list[Document]:
    """Documents from texts, (id, text) pairs, mappings with "text" (and "id", "title", "url"), or Documents; each
    without an id is named `doc-N` by its place. A UserError names the first that is neither, and a list with no
    text at all."""
    if isinstance(documents, (str, bytes, Mapping)):
        documents = [documents]
    out: list[Document] = []
    for n, d in enumerate(documents, 1):
        if isinstance(d, Document):
            doc = d
        elif isinstance(d, str):
            doc = Document(f"doc-{n}", d)
        elif isinstance(d, tuple) and len(d) == 2 and all(isinstance(x, str) for x in d):
            doc = Document(d[0] or f"doc-{n}", d[1])
        elif isinstance(d, Mapping) and isinstance(d.get("text"), str):
            doc = Document(str(d.get("id") or f"doc-{n}"), d["text"], str(d.get("title") or ""), d.get("url") or None)
        else:
            raise UserError(
                f"document {n} is a {type(d).__name__}: give each document as a text, (id, text), or "
                '{"id": ..., "text": ...}'
            )
        out.append(doc)
    ids = [d.id for d in out]
    if len(set(ids)) != len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise UserError(f"two documents have the id {twice!r}: give each its own")
    if not any(d.text.strip() for d in out):
        raise UserError("no document has any text: give the documents the answer should rest on")
    return out


def _text(content: Any) -> list[str]:
    """The texts of a message's content: a string, or its text parts that are not marked to be ignored."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            p["text"]
            for p in content
            if isinstance(p, dict)
            and p.get("type") == "text"
            and isinstance(p.get("text"), str)
            and p.get(MARK) != "ignore"
        ]
    return []


def request_documents(messages: Any) -> list[Document]:
    """The documents of a chat request's `messages` (see the module doc), each named by its role and place:
    `system-1`, `tool-3` (a tool message's own `tool_call_id` or `name` as its title), `user-2`."""
    if not isinstance(messages, list):
        return []
    users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
    last_user = users[-1] if users else None
    out: list[Document] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get(MARK) == "ignore":
            continue
        role = str(m.get("role") or "")
        texts = [t for t in _text(m.get("content")) if t.strip()]
        if isinstance(m.get("content"), list):  # parts marked "document" are read whatever the role
            marked = [
                p["text"]
                for p in m["content"]
                if isinstance(p, dict) and p.get(MARK) == "document" and isinstance(p.get("text"), str)
            ]
        else:
            marked = []
        if m.get(MARK) == "document":
            read = texts
        elif role in DOCUMENT_ROLES or (role == "user" and i != last_user):
            read = texts
        elif role == "user":
            read = [t for t in texts if len(t.strip()) >= MIN_QUESTION_DOCUMENT] or marked
        else:
            read = marked
        title = str(m.get("name") or m.get("tool_call_id") or "") if role in ("tool", "function") else ""
        for k, t in enumerate(read, 1):
            part = f".{k}" if len(read) > 1 else ""
            out.append(Document(f"{role or 'message'}-{i + 1}{part}", t, title))
    return out
