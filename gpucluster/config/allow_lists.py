"""Lists of IPv4 ranges a port admits (`rest_api.allow_cidrs`): every such field is an
`AllowedCidrs`, so one rule judges them all.

A security group admits the union of its rules, so a list is judged by what it covers,
not by how it is spelled: 0.0.0.0/0 is refused, and so is any list whose entries cover
every address between them (0.0.0.0/1 with 128.0.0.0/1, four /2s). The fields take IPv4
only, so no IPv6 range (::/0) can be written.
"""

from __future__ import annotations

import contextlib
import ipaddress
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator

from gpucluster.config.fields import fail, from_text

EVERY_ADDRESS = ipaddress.IPv4Network("0.0.0.0/0")


def _readable(value: object) -> object:
    # pydantic's own message ("not a valid IPv4 network") says neither why nor what to write.
    if not isinstance(value, str):
        return value
    try:
        ipaddress.IPv4Network(value)
    except ValueError:
        hint = ""
        with contextlib.suppress(ValueError):
            hint = f"; its network address is {ipaddress.IPv4Network(value, strict=False)}"
        raise fail(
            "ipv4network_parsing",
            f"'{value}' is not an IPv4 CIDR block (address/prefix with no host bits set){hint}; "
            "write one like 10.20.0.0/16",
        ) from None
    return value


Cidr = Annotated[
    ipaddress.IPv4Network,
    BeforeValidator(_readable),
    *from_text(ipaddress.IPv4Network, "a CIDR block like 10.20.0.0/16"),
]


def _not_everyone(networks: list[ipaddress.IPv4Network]) -> list[ipaddress.IPv4Network]:
    # "Whoever can route to the port" is never the audience a list means: refused, not
    # warned about, so the mistake cannot pass unseen.
    if list(ipaddress.collapse_addresses(networks)) == [EVERY_ADDRESS]:
        listed = ", ".join(str(network) for network in networks)
        between = "" if len(networks) == 1 else " together"
        raise fail(
            "every_address",
            f"{listed}{between} would admit every address; list only the networks your clients "
            "are in (e.g. your VPN's range)",
        )
    return networks


AllowedCidrs = Annotated[list[Cidr], AfterValidator(_not_everyone)]
