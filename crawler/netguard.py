"""SSRF guard: refuse URLs whose host resolves to an address an untrusted URL must never reach.

Cited URLs come from AI answers, i.e. from anyone. Without a guard a crawl node could be pointed at
cloud metadata services (169.254.169.254), the cluster's own services (10.x, 127.x) or the
S3 store. The guard resolves the host first and checks every resolved address, so a public name
that resolves to a private address is refused too. Connections then go to checked addresses only
(Scrapy's resolver re-checks the address it hands out, ``crawler.fetch.middlewares.GuardedResolver``;
Chromium connects through ``crawler.fetch.pinproxy.PinningProxy``), which closes the DNS-rebinding window.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Address ranges refused by default (beyond what ``ipaddress`` flags as private/reserved).
BLOCKED_NETWORKS: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(net)
    for net in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
        "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
        "::/128", "::1/128", "64:ff9b::/96", "100::/64", "fc00::/7", "fe80::/10", "ff00::/8", "2001:db8::/32",
    )
)  # fmt: skip
#: Well-known metadata endpoints, named in the refusal message.
METADATA_ADDRESSES = frozenset({"169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200"})


class BlockedAddress(Exception):
    """A URL whose host is, or resolves to, a refused address (or cannot be resolved)."""


@dataclass(frozen=True)
class AddressPolicy:
    """Which destinations a crawl may connect to.

    Args:
        allow_private_networks: Allow every address (intranet crawls, tests); the guard then only
            rejects hosts that do not resolve.
        allowlist: Host names (exact, case-insensitive) or CIDR ranges / single IPs that are allowed
            even though they are private, e.g. ``["127.0.0.2/31", "wiki.intranet"]``.
    """

    allow_private_networks: bool = False
    allowlist: tuple[str, ...] = ()
    _networks: tuple[IPNetwork, ...] = field(init=False, repr=False, compare=False)
    _hosts: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        networks, hosts = [], set()
        for entry in self.allowlist:
            try:
                networks.append(ipaddress.ip_network(entry.strip(), strict=False))
            except ValueError:
                hosts.add(entry.strip().lower().rstrip("."))
        object.__setattr__(self, "_networks", tuple(networks))
        object.__setattr__(self, "_hosts", frozenset(hosts))

    def refusal(self, address: str) -> str | None:
        """Why ``address`` (a literal IP) is refused, or None when it is allowed."""
        ip = ipaddress.ip_address(address.strip("[]").split("%")[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        if self.allow_private_networks or any(ip in net for net in self._networks):
            return None
        if str(ip) in METADATA_ADDRESSES:
            return f"{ip} is a cloud metadata address"
        for net in BLOCKED_NETWORKS:
            if ip.version == net.version and ip in net:
                return f"{ip} is in the non-public range {net}"
        if not ip.is_global:
            return f"{ip} is not a public address"
        return None

    def host_allowed_by_name(self, host: str) -> bool:
        return host.lower().rstrip(".") in self._hosts

    def check_addresses(self, host: str, addresses: Iterable[str]) -> None:
        """Raise BlockedAddress if any address ``host`` resolved to is refused."""
        if self.host_allowed_by_name(host):
            return
        addresses = list(addresses)
        if not addresses:
            raise BlockedAddress(f"{host} did not resolve to any address")
        for address in addresses:
            reason = self.refusal(address)
            if reason:
                raise BlockedAddress(
                    f"refused {host}: {reason}; to allow it: --allowlist {host} or --allow-private-networks"
                )

    def check_url(self, url: str) -> list[str]:
        """Resolve a URL's host (blocking DNS) and check it; returns the resolved addresses.

        Raises:
            BlockedAddress: the host is refused or does not resolve.
        """
        parts = urlsplit(url)
        host = parts.hostname or ""
        if not host:
            raise BlockedAddress(f"URL has no host: {url}")
        addresses = resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
        self.check_addresses(host, addresses)
        return addresses


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


def resolve(host: str, port: int = 80) -> list[str]:
    """Every address ``host`` resolves to (an IP literal resolves to itself); empty on failure."""
    host = host.strip("[]")
    if is_ip_literal(host):
        return [host]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return sorted({info[4][0] for info in infos})
