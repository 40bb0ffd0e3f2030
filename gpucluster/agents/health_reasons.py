"""The Slurm drain reasons gpucluster's own checks set, written once.

A check that finds a node broken drains it with `<source>: <what failed>`; the health
check's template takes its prefix from here, and the head's node_repair agent reads a
reason with `classify` to tell a hardware failure (replace the instance) from a drain a
person set (never touched). Any reason that does not start with one of these prefixes
followed by ": " is a person's.

    healthcheck: GPU count 7, want 8;fi_info hung (no answer in 8 s)
    prolog: EFA interface count 31, want 32
    dcgm: diag level 2 failed (PCIe)

Slurm's own "Not responding" (slurmctld set the node DOWN after SlurmdTimeout) counts as
unreachable: the instance may still come back, so the agent waits before replacing it.
Like cluster_names, this module imports nothing: it ships in the bundle's agents tree.
"""

from __future__ import annotations

from typing import Literal

# The slurmd HealthCheckProgram (templates/slurm/healthcheck.sh.j2).
HEALTHCHECK = "healthcheck"
# The light check in Slurm's Prolog.
PROLOG = "prolog"
# DCGM diagnostics (at join, or a diagnostic job).
DCGM = "dcgm"
CHECK_PREFIXES = (HEALTHCHECK, PROLOG, DCGM)
SEPARATOR = ": "
# slurmctld's reason for a node it set DOWN because slurmd stopped answering.
NOT_RESPONDING = "Not responding"
# slurmctld's drain when a Prolog fails on a node not drained yet. gpucluster's only Prolog
# is the health check, which drains with its own reason first, so this one means a probe
# outlived its timeout (a task stuck in the GPU driver ignores KILL) until PrologEpilogTimeout
# killed the check, or its own drain failed: a failed check all the same.
PROLOG_ERROR = "Prolog error"
# What node_repair appends to a reason once it asked Auto Scaling to replace the instance.
REPLACED_SEPARATOR = "; replaced "

Kind = Literal["check", "unreachable", "person"]


def drain_reason(prefix: str, detail: str) -> str:
    """The reason a check of ours drains a node with."""
    if prefix not in CHECK_PREFIXES:
        raise ValueError(f"'{prefix}' is not one of gpucluster's check prefixes {CHECK_PREFIXES}")
    return f"{prefix}{SEPARATOR}{detail}"


def original_reason(reason: str) -> str:
    """The reason as the check (or Slurm, or a person) set it, without node_repair's note."""
    return reason.split(REPLACED_SEPARATOR, 1)[0].strip()


def replaced_reason(reason: str, instance_id: str, when: str) -> str:
    """The node's reason kept, with what node_repair did appended."""
    return f"{original_reason(reason)}{REPLACED_SEPARATOR}{instance_id} at {when}"


def classify(reason: str) -> Kind:
    """Who drained the node: one of our checks, Slurm because it stopped answering, or a person."""
    text = original_reason(reason)
    if text == PROLOG_ERROR or any(text.startswith(prefix + SEPARATOR) for prefix in CHECK_PREFIXES):
        return "check"
    if text == NOT_RESPONDING:
        return "unreachable"
    return "person"
