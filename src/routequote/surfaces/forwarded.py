"""Which peers may name the client: forwarded headers are trusted only from the proxies the operator names.

uvicorn rewrites the client address from `X-Forwarded-For` (and the scheme from `X-Forwarded-Proto`) for peers
in `forwarded_allow_ips`, and by default trusts 127.0.0.1: behind nothing, any local caller could then pick its
own address, and with it a fresh per-client rate-limit bucket. `ROUTEQUOTE_TRUSTED_PROXIES` names the proxies
(IPs or CIDR networks, comma-separated); empty (the default) turns forwarded headers off entirely, so the client
is the TCP peer. Every per-client key (rate limits, login limits) reads the address this leaves in the scope.
"""

from __future__ import annotations

import ipaddress
from typing import Any


def trusted_proxies(spec: str) -> list[str]:
    """The entries of `spec`, each a valid IP address or network; ValueError names the first bad one."""
    out = []
    for item in filter(None, (p.strip() for p in spec.split(","))):
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(
                f"ROUTEQUOTE_TRUSTED_PROXIES: {item[:60]!r} is not an IP address or network"
            ) from None
        out.append(item)
    return out


def proxy_options(spec: str) -> dict[str, Any]:
    """uvicorn's proxy options for `spec`: headers honoured only from the named proxies, else not at all."""
    proxies = trusted_proxies(spec)
    if not proxies:
        return {"proxy_headers": False, "forwarded_allow_ips": ""}
    return {"proxy_headers": True, "forwarded_allow_ips": ",".join(proxies)}
