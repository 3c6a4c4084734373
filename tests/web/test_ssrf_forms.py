"""The scraper's address guard refuses a private IPv4 address in every form it can take (issue 11, item 7):
inside IPv6 (IPv4-mapped, -translated, -compatible, 6to4, Teredo, NAT64, ISATAP) and as the decimal, octal
and hex numbers inet_aton reads. IP literals are resolved without DNS, so nothing here leaves the machine."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import veracity.web.scrape as scrape_mod
from veracity.web.scrape import ScrapeError, Scraper, _address_kind, check_url, embedded_ipv4

PROPERTY = settings(max_examples=200, deadline=None)

# Every IPv4 range the guard must refuse, loopback to reserved.
NON_PUBLIC = [
    ipaddress.ip_network(n)
    for n in (
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "169.254.0.0/16",
        "0.0.0.0/8",
        "100.64.0.0/10",
        "192.0.0.0/29",
        "192.0.2.0/24",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "255.255.255.255/32",
    )
]


@st.composite
def non_public_ipv4(draw) -> ipaddress.IPv4Address:
    net = draw(st.sampled_from(NON_PUBLIC))
    return net[draw(st.integers(min_value=0, max_value=net.num_addresses - 1))]


def _v6(n: int) -> ipaddress.IPv6Address:
    return ipaddress.IPv6Address(n)


def nat64_local(v4: int, prefix_len: int, rest: int) -> ipaddress.IPv6Address:
    """v4 inside 64:ff9b:1::/48 as RFC 6052 lays it out for a prefix of `prefix_len` bits (u octet zero)."""
    octets = v4.to_bytes(4, "big")
    prefix = bytearray(int(ipaddress.IPv6Address("64:ff9b:1::")).to_bytes(16, "big"))
    start = prefix_len // 8
    if prefix_len == 96:
        prefix[12:16] = octets
    else:
        before = 8 - start  # octets before the u octet (byte 8)
        prefix[start:8] = octets[:before]
        prefix[9 : 9 + 4 - before] = octets[before:]
        if prefix_len > 48:  # bits of the /48 after 64:ff9b:1 up to the prefix are the operator's
            prefix[6:start] = (rest & ((1 << 8 * (start - 6)) - 1)).to_bytes(start - 6, "big")
    return ipaddress.IPv6Address(bytes(prefix))


@st.composite
def embedded_forms(draw, v4_strategy=non_public_ipv4()) -> tuple[str, ipaddress.IPv6Address, ipaddress.IPv4Address]:
    v4 = draw(v4_strategy)
    n = int(v4)
    bits = draw(st.integers(min_value=0, max_value=2**80 - 1))
    form = draw(
        st.sampled_from(["mapped", "translated", "compatible", "6to4", "teredo", "nat64", "nat64-local", "isatap"])
    )
    if form == "mapped":
        ip = _v6(0xFFFF << 32 | n)
    elif form == "translated":
        ip = _v6(0xFFFF << 48 | n)
    elif form == "compatible":
        ip = _v6(n)
    elif form == "6to4":
        ip = _v6(0x2002 << 112 | n << 80 | bits)
    elif form == "teredo":
        server = bits & 0xFFFFFFFF
        flags_port = (bits >> 32) & 0xFFFFFFFF
        ip = _v6(0x20010000 << 96 | server << 64 | flags_port << 32 | (n ^ 0xFFFFFFFF))
    elif form == "nat64":
        ip = _v6(int(ipaddress.IPv6Address("64:ff9b::")) | n)
    elif form == "nat64-local":
        ip = nat64_local(n, draw(st.sampled_from([48, 56, 64, 96])), bits)
    else:  # ISATAP: any /64 prefix, interface id 0000:5efe or 0200:5efe
        prefix = bits & 0xFFFFFFFFFFFFFFFF
        ip = _v6(prefix << 64 | draw(st.sampled_from([0x0000, 0x0200])) << 48 | 0x5EFE << 32 | n)
    return form, ip, v4


@PROPERTY
@given(embedded_forms())
def test_property_every_embedded_form_of_a_non_public_ipv4_is_refused(case):
    form, ip, v4 = case
    assert _address_kind(str(v4)) is not None  # the guard refuses the plain IPv4 address ...
    assert _address_kind(str(ip)) is not None, (form, str(ip), str(v4))  # ... and so each form of it
    url = f"http://[{ip}]:8080/path"
    with pytest.raises(ScrapeError, match="refused to fetch"):
        check_url(url)


@PROPERTY
@given(embedded_forms())
def test_property_the_embedded_address_is_found(case):
    form, ip, v4 = case
    if form == "compatible" and int(v4) <= 1:
        return  # :: and ::1 are the IPv6 unspecified and loopback addresses themselves
    assert v4 in [inner for _, inner in embedded_ipv4(ip)], (form, str(ip))


@PROPERTY
@given(embedded_forms(), st.sampled_from(["host.test", "cdn.example"]))
def test_property_a_name_resolving_to_an_embedded_form_is_refused(case, host):
    form, ip, v4 = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scrape_mod, "_resolve", lambda h, port: ["93.184.216.34", str(ip)])
        with pytest.raises(ScrapeError, match=rf"{host} resolves to .*, an? .* address"):
            check_url(f"https://{host}/")


@pytest.mark.parametrize(
    "url, kind",
    [
        ("http://[2002:7f00:1::]/", "6to4-embedded loopback address"),
        ("http://[2002:a9fe:a9fe::]/", "6to4-embedded link-local address"),
        ("http://[2002:c0a8:0101:1::1]/", "6to4-embedded private address"),
        ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "Teredo-embedded loopback address"),
        ("http://[64:ff9b::7f00:1]/", "NAT64-embedded loopback address"),
        ("http://[64:ff9b::a9fe:a9fe]/", "NAT64-embedded link-local address"),
        ("http://[64:ff9b:1::a00:1]/", "NAT64-embedded private address"),
        ("http://[fe80::5efe:a9fe:a9fe]/", "ISATAP-embedded link-local address"),
        ("http://[2600:1f18::200:5efe:a00:1]/", "ISATAP-embedded private address"),
        ("http://[::7f00:1]/", "IPv4-compatible-embedded loopback address"),
        ("http://[::ffff:0:a9fe:a9fe]/", "IPv4-translated-embedded link-local address"),
        ("http://[::ffff:169.254.169.254]/", "link-local address"),
        ("http://[fec0::1]/", "site-local address"),
    ],
)
def test_issue_forms_are_refused_and_named(url, kind):
    with pytest.raises(ScrapeError) as e:
        Scraper().fetch(url)
    assert str(e.value) == f"refused to fetch {url}: {kind} (allow_private_addresses to allow)"


@pytest.mark.parametrize(
    "host",
    [
        "2130706433",
        "0x7f000001",
        "017700000001",
        "0x7f.1",
        "127.1",
        "0177.0.0.1",
        "0xa9.0xfe.0xa9.0xfe",
        "2852039166",
        "0xA9FEA9FE",
        "10.0x0.0.01",
        "0",
    ],
)
def test_numeric_ipv4_forms_are_refused(host):
    url = f"http://{host}/latest/meta-data/"
    with pytest.raises(ScrapeError, match=r"refused to fetch .*(loopback|link-local|private|unspecified) address"):
        check_url(url)
    assert _address_kind(host) is not None


@pytest.mark.parametrize(
    "address", ["2002:808:808::1", "2600:1f18::200:5efe:808:808", "2a00:1450:4001::200e", "8.8.8.8"]
)
def test_public_addresses_and_forms_that_embed_a_public_ipv4_pass(address):
    assert _address_kind(address) is None


def test_an_unreadable_address_is_refused_not_a_crash():
    assert _address_kind("not-an-ip") == "unreadable"
