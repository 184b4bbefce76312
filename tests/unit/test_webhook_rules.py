"""The webhook URL and address rules: what a session's webhook may point at."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routequote.core.webhook_rules import (
    MAX_RETRY_SECONDS,
    RETRY_WINDOW_SECONDS,
    address_problem,
    checked_addresses,
    parse_webhook_url,
    retry_delay,
    undeliverable,
)
from routequote.errors import InvalidRequest


def refused(raw: object, allow: tuple[str, ...] = ()) -> str:
    with pytest.raises(InvalidRequest) as caught:
        parse_webhook_url(raw, allow)
    assert caught.value.reason_class == "webhook_url_invalid"
    return caught.value.message


def test_a_plain_https_url_is_taken_apart() -> None:
    url = parse_webhook_url("https://Hooks.Example.com/rq/in?team=7", ())
    assert (url.scheme, url.host, url.port, url.target, url.allowed) == (
        "https",
        "hooks.example.com",
        443,
        "/rq/in?team=7",
        False,
    )
    assert url.url == "https://hooks.example.com:443/rq/in?team=7"


@pytest.mark.parametrize(
    ("raw", "rule"),
    [
        ("http://hooks.example.com/x", "https"),
        ("ftp://hooks.example.com/x", "https"),
        ("https://user:pw@hooks.example.com/x", "credentials"),
        ("https://user@hooks.example.com/x", "credentials"),
        ("https://hooks.example.com/x#frag", "fragment"),
        ("https:///x", "host"),
        ("https://hooks..example.com/", "DNS name"),
        ("https://-bad.example.com/", "DNS name"),
        ("https://hooks.example.com:0/", "port"),
        ("https://hooks.example.com:99999/", "valid URL"),
        ("https://hooks.example.com/a b", "printable"),
        ("https://hööks.example.com/", "printable"),
        ("https://0x7f000001/", "DNS name"),
        ("https://2130706433/", "DNS name"),
        ("https://a." + "b" * 64 + ".com/", "DNS name"),
        ("", "non-empty"),
        (7, "non-empty"),
    ],
)
def test_urls_that_break_a_rule_are_refused_without_repeating_them(raw: object, rule: str) -> None:
    message = refused(raw)
    assert rule in message
    if isinstance(raw, str) and raw:
        assert raw not in message and "example" not in message


def test_a_long_url_is_refused() -> None:
    assert "2048" in refused("https://hooks.example.com/" + "a" * 2048)


def test_http_is_taken_only_for_an_allowed_host() -> None:
    refused("http://127.0.0.1:9000/in")
    url = parse_webhook_url("http://127.0.0.1:9000/in", ["127.0.0.1"])
    assert (url.scheme, url.port, url.allowed) == ("http", 9000, True)
    assert parse_webhook_url("http://[::1]:9/", ["::1"]).url == "http://[::1]:9/"


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd12::1", "private"),
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("100.100.100.200", "metadata"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("100.64.0.1", "shared"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::a9fe:a9fe", "metadata"),
        ("2002:7f00:1::", "loopback"),
        ("240.0.0.1", "address"),
        ("192.0.2.1", "private"),
    ],
)
def test_addresses_off_the_public_internet_are_refused(address: str, problem: str) -> None:
    found = address_problem(ipaddress.ip_address(address))
    assert found is not None and problem in found


@pytest.mark.parametrize("address", ["93.184.215.14", "1.1.1.1", "2606:4700:4700::1111", "8.8.8.8"])
def test_public_addresses_pass(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is None


def test_one_private_answer_refuses_the_host_unless_it_is_allowed() -> None:
    url = parse_webhook_url("https://hooks.example.com/in", ())
    assert [str(a) for a in checked_addresses(url, ["1.1.1.1", "1.1.1.1"])] == ["1.1.1.1"]
    with pytest.raises(InvalidRequest, match="loopback"):
        checked_addresses(url, ["1.1.1.1", "127.0.0.1"])
    with pytest.raises(InvalidRequest, match="does not resolve"):
        checked_addresses(url, [])
    allowed = parse_webhook_url("https://hooks.example.com/in", ["HOOKS.example.com."])
    assert [str(a) for a in checked_addresses(allowed, ["127.0.0.1"])] == ["127.0.0.1"]


def test_retries_double_from_five_seconds_to_an_hour_with_jitter() -> None:
    assert [retry_delay(n, 1.0) for n in range(1, 8)] == [5, 10, 20, 40, 80, 160, 320]
    assert retry_delay(30, 1.0) == MAX_RETRY_SECONDS
    assert retry_delay(1, 0.5) == 2
    with pytest.raises(ValueError):
        retry_delay(1, 1.5)
    assert not undeliverable(1_000, 1_000 + RETRY_WINDOW_SECONDS - 1)
    assert undeliverable(1_000, 1_000 + RETRY_WINDOW_SECONDS)


@given(st.integers(min_value=0, max_value=10_000), st.floats(min_value=0.5, max_value=1.0))
def test_a_retry_delay_is_always_between_one_second_and_an_hour(attempts: int, jitter: float) -> None:
    assert 1 <= retry_delay(attempts, jitter) <= MAX_RETRY_SECONDS
