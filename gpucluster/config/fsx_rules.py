"""FSx for Lustre sizing rules that CreateFileSystem enforces and CloudFormation only reports at deploy.

Each rule returns None when the value is accepted, else one sentence saying what to use.
Sources (checked Dec 2026):
- Metadata IOPS: FSx API reference, CreateFileSystemLustreMetadataConfiguration.Iops,
  https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystemLustreMetadataConfiguration.html
  ("For SSD file systems, valid values are 1500, 3000, 6000, 12000, and multiples of 12000
  up to a maximum of 192000").
- EFA-enabled capacity: FSx for Lustre user guide, "Increasing storage capacity",
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/increase-storage-capacity.html
  (multiples of 38400 / 19200 / 9600 / 4800 GiB for 125 / 250 / 500 / 1000 MB/s/TiB).
"""

from __future__ import annotations

METADATA_IOPS_SMALL = (1500, 3000, 6000, 12000)
METADATA_IOPS_STEP = 12000
METADATA_IOPS_MAX = 192000

# An EFA-enabled file system is built from servers of a fixed size per throughput tier,
# so its capacity grows in whole servers, not in the 2400 GiB steps of PERSISTENT_2.
EFA_CAPACITY_STEP_GIB = {125: 38400, 250: 19200, 500: 9600, 1000: 4800}


def metadata_iops_valid_values() -> tuple[int, ...]:
    """Every accepted value, smallest first (1500 ... 192000)."""
    multiples = range(2 * METADATA_IOPS_STEP, METADATA_IOPS_MAX + 1, METADATA_IOPS_STEP)
    return METADATA_IOPS_SMALL + tuple(multiples)


def metadata_iops_problem(iops: int) -> str | None:
    if iops in metadata_iops_valid_values():
        return None
    # 18000 is the typical mistake (a multiple of 6000 but not of 12000): name the neighbours.
    lower = max((v for v in metadata_iops_valid_values() if v < iops), default=None)
    higher = min((v for v in metadata_iops_valid_values() if v > iops), default=None)
    nearest = " or ".join(str(v) for v in (lower, higher) if v is not None)
    return (
        f"{iops} is not a metadata IOPS value FSx accepts; use 1500, 3000, 6000, 12000 or a "
        f"multiple of 12000 up to 192000 (nearest: {nearest}), or null for automatic"
    )


def efa_capacity_problem(storage_gib: int, throughput_per_tib: int | None) -> str | None:
    step = EFA_CAPACITY_STEP_GIB.get(throughput_per_tib or 0)
    if step is None:
        return f"EFA-enabled FSx needs throughput_per_tib 125, 250, 500 or 1000, not {throughput_per_tib}"
    if storage_gib % step == 0:
        return None
    lower = storage_gib // step * step
    options = " or ".join(str(v) for v in (lower, lower + step) if v > 0)
    return (
        f"{storage_gib} GiB is not a size an EFA-enabled file system at {throughput_per_tib} MB/s/TiB "
        f"can have; use a multiple of {step} GiB (e.g. {options}), or a higher throughput_per_tib "
        "for smaller steps (125: 38400, 250: 19200, 500: 9600, 1000: 4800 GiB)"
    )
