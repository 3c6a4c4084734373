"""Reading a text to check from a file of any supported kind, with spans indexing the text it yields."""

import io

import pytest
from web_stub import pdf_bytes

from veracity.claims import extract_claims
from veracity.claims.sources import read_source
from veracity.errors import UserError
from veracity.inputs import InputError, clean_text_input


def test_pdf_and_html_files_become_their_text(tmp_path):
    (tmp_path / "a.pdf").write_bytes(pdf_bytes("Marie Curie was born in Warsaw."))
    src = read_source(str(tmp_path / "a.pdf"))
    assert src.kind == "pdf" and "Marie Curie was born in Warsaw." in src.text
    (tmp_path / "b.html").write_text(
        "<html><head><title>T</title><script>var x=1;</script></head><body>"
        "<p>Paris is the capital of France.</p><p>It hosted the 1900 Olympics.</p>"
        "</body></html>"
    )
    src = read_source(str(tmp_path / "b.html"))
    assert src.kind == "html" and "var x" not in src.text
    claims = extract_claims(src.text).claims
    assert [c.text for c in claims] == ["Paris is the capital of France.", "Paris hosted the 1900 Olympics."]
    assert src.text[claims[1].spans[0][0] : claims[1].spans[0][1]] == "It hosted the 1900 Olympics."


def test_text_rules_have_codes_and_numbers():
    with pytest.raises(InputError) as e:
        clean_text_input(b"x" * 101, max_bytes=100)
    assert e.value.code == "text_too_long" and "the limit is 100 bytes" in str(e.value)
    for raw, code in (
        (b"", "text_empty"),
        (b"ab\x00cd", "text_binary"),
        (b"\xff\xfe\xfa", "invalid_text"),
        (bytes(range(1, 32)) * 10, "text_binary"),
    ):
        with pytest.raises(InputError) as e:
            clean_text_input(raw)
        assert e.value.code == code
    assert clean_text_input("  a\r\nb  ") == "a\nb"


def test_standard_input_and_missing_files():
    assert read_source("-", stdin=io.BytesIO(b"Paris is in France.")).origin == "standard input"
    with pytest.raises(UserError, match="not found"):
        read_source("no-such-file.txt")
    with pytest.raises(UserError, match="only http"):
        read_source("ftp://example.org/x.txt")
