"""What a session's webhook may point at, and when a failed delivery is tried again (pure: no I/O).

The URL rules refuse what a server-side request forgery needs: a scheme other than https (http only for a
host the operator allows), credentials in the URL, a fragment, a host that is not a plain DNS name or IP
literal. The address rule refuses every address that is not on the public internet (loopback, private,
link-local, multicast, shared, reserved, and the cloud metadata addresses), including IPv4 hidden inside
IPv6. The operator's allow list (`ROUTEQUOTE_WEBHOOK_ALLOW_HOSTS`) lifts both, host by host.

No message ever repeats the URL: it may carry the receiver's own secret in its path or query.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from routequote.errors import InvalidRequest

MAX_URL_LENGTH: Final = 2048
_HOST_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")
# addresses that are public by the ipaddress module's tables but answer as cloud metadata services
_METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: not on the public internet
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class WebhookUrl:
    """A webhook URL that passed the syntax rules: what to connect to and what to ask for."""

    scheme: str  # "https" or (allowed hosts only) "http"
    host: str  # lower-case DNS name, or an IP literal without brackets
    port: int
    target: str  # path and query, as sent in the request line
    allowed: bool  # the operator allows this host: private addresses and http are accepted

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.target}"


def _refuse(message: str) -> InvalidRequest:
    return InvalidRequest("webhook_url_invalid", message)


def normalized_host(host: str) -> str:
    return host.strip().lower().rstrip(".")


def parse_webhook_url(raw: object, allow_hosts: Collection[str]) -> WebhookUrl:
    """The URL's parts, or 400 webhook_url_invalid naming the rule it broke (never the URL)."""
    if not isinstance(raw, str) or not raw:
        raise _refuse("webhook.url must be a non-empty string")
    if len(raw) > MAX_URL_LENGTH:
        raise _refuse(f"webhook.url must be at most {MAX_URL_LENGTH} characters")
    if not raw.isascii() or any(c.isspace() or ord(c) < 0x21 or ord(c) == 0x7F for c in raw):
        raise _refuse("webhook.url must be printable ASCII without spaces (encode other characters)")
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        raise _refuse("webhook.url is not a valid URL") from None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise _refuse("webhook.url must not carry credentials")
    if parts.fragment or raw.endswith("#"):
        raise _refuse("webhook.url must not carry a fragment")
    host = normalized_host(parts.hostname or "")
    if not host:
        raise _refuse("webhook.url needs a host")
    if not _is_ip_literal(host) and not _is_dns_name(host):
        raise _refuse("webhook.url host must be a DNS name or an IP address")
    allowed = host in {normalized_host(h) for h in allow_hosts}
    scheme = parts.scheme.lower()
    if scheme != "https" and not (scheme == "http" and allowed):
        raise _refuse("webhook.url must use https (http only for hosts the operator allows)")
    if port == 0:
        raise _refuse("webhook.url port must be 1..65535")
    target = parts.path or "/"
    if parts.query:
        target = f"{target}?{parts.query}"
    return WebhookUrl(scheme, host, port or (443 if scheme == "https" else 80), target, allowed)


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _is_dns_name(host: str) -> bool:
    labels = host.split(".")
    # the last label starts with a letter, as every top-level domain does: "2130706433" or "0x7f000001" is
    # an IPv4 form some resolvers read loosely, never a name
    return (
        len(host) <= 253 and all(_HOST_LABEL.fullmatch(label) for label in labels) and labels[-1][0].isalpha()
    )


def address_problem(address: IpAddress) -> str | None:
    """Why a connection to this address is refused, or None for a public address."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is None and address.teredo is not None:
            embedded = address.teredo[1]
        if embedded is not None:
            return address_problem(embedded)
    if address in _METADATA:
        return "a cloud metadata address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_unspecified:
        return "an unspecified address"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "a shared (carrier-grade NAT) address"
    if address.is_private:
        return "a private address"
    if address.is_reserved or not address.is_global:
        return "a reserved address"
    return None


def checked_addresses(url: WebhookUrl, addresses: Collection[str]) -> list[IpAddress]:
    """The resolved addresses a delivery may connect to: all of them public, or the host allowed.

    One refused address refuses the host: a name that answers both a public and a private address is how a
    rebinding attack picks which one a later lookup returns."""
    parsed = [ipaddress.ip_address(a.split("%", 1)[0]) for a in addresses]
    if not parsed:
        raise _refuse("webhook.url host does not resolve")
    if not url.allowed:
        for address in parsed:
            problem = address_problem(address)
            if problem is not None:
                raise _refuse(f"webhook.url resolves to {problem}, which is refused")
    return list(dict.fromkeys(parsed))


# ---- retries ----------------------------------------------------------------------------------------

RETRY_WINDOW_SECONDS: Final = 24 * 3600
FIRST_RETRY_SECONDS: Final = 5
MAX_RETRY_SECONDS: Final = 3600


def retry_delay(attempts: int, jitter: float) -> int:
    """Seconds before attempt `attempts + 1`: doubling from 5 s, capped at one hour, scaled by a jitter in
    [0.5, 1.0] so receivers that failed together are not retried together. `attempts` counts failures."""
    if not 0.5 <= jitter <= 1.0:
        raise ValueError("jitter must lie in [0.5, 1.0]")
    base = min(MAX_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2 ** min(max(attempts - 1, 0), 20))
    return max(1, int(base * jitter))


def undeliverable(first_failure_epoch: int, now_epoch: int) -> bool:
    """An event that has failed for the whole retry window is given up (and shown on the session)."""
    return now_epoch - first_failure_epoch >= RETRY_WINDOW_SECONDS
