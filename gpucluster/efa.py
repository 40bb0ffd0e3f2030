"""Network-interface layout for EFA instances, derived from catalog data.

EC2 user guide ("Maximize network bandwidth ... multiple network cards"):
the primary interface (card 0, device 0) is ENA; when card 0 supports EFA an
efa-only interface goes on card 0 device 1; every other EFA card gets an
efa-only interface on device 0. A card 0 with room for only one interface
cannot hold both, so its single interface becomes ``efa`` (EFA with ENA).
"""

from __future__ import annotations

from typing import NamedTuple

from gpucluster.catalog import InstanceType, InterfaceType


class InterfaceSlot(NamedTuple):
    network_card_index: int
    device_index: int
    interface_type: InterfaceType


def efa_interface_layout(instance: InstanceType) -> list[InterfaceSlot]:
    if not instance.efa_supported:
        raise ValueError(f"{instance.name} does not support EFA")
    card0 = instance.network_cards[0]
    if card0.index != 0:
        raise ValueError(f"{instance.name}: catalog has no network card 0")
    slots: list[InterfaceSlot] = []
    if card0.supports_efa and card0.max_interfaces < 2:
        slots.append(InterfaceSlot(0, 0, "efa"))
    else:
        slots.append(InterfaceSlot(0, 0, "interface"))
        if card0.supports_efa:
            slots.append(InterfaceSlot(0, 1, "efa-only"))
    slots.extend(
        InterfaceSlot(card.index, 0, "efa-only") for card in instance.network_cards[1:] if card.supports_efa
    )
    efa_count = sum(1 for slot in slots if slot.interface_type != "interface")
    if efa_count != instance.max_efa_interfaces:
        raise ValueError(
            f"{instance.name}: layout has {efa_count} EFA interfaces, "
            f"catalog says {instance.max_efa_interfaces}"
        )
    return slots


def efa_count(instance: InstanceType) -> int:
    return sum(1 for slot in efa_interface_layout(instance) if slot.interface_type != "interface")
