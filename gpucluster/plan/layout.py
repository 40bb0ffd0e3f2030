"""The arithmetic of a parallel layout on nodes of G GPUs: pure, no config, no I/O.

Ranks are laid out as Megatron-LM does by default (order tp-cp-ep-dp-pp): TP varies fastest,
then CP, then the EP split of the DP replicas, then DP, then PP. So a TP group is TP
consecutive ranks and an EP group spans TP x CP x EP consecutive ranks; torchrun places
consecutive ranks on one node. Rules (FACTS.md, torchrun under Slurm; the blueprint's step 8):
  ranks           = TP x PP x CP x DP (EP splits the DP replicas, it adds no ranks)
  global batch    = micro-batch x accumulation x DP (not times TP, PP or CP: those ranks
                    share one sample)
  TP              within a node: it communicates on every layer
  EP              within a node: its all-to-all runs on every MoE layer
  nodes           whole nodes only, and no more than the group has
"""

from __future__ import annotations

from dataclasses import dataclass


class PlanRefusal(ValueError):
    """A layout that cannot run as asked: the option to change, what is wrong, how to fix it."""

    def __init__(self, option: str, what: str, fix: str) -> None:
        super().__init__(f"{option}: {what}; {fix}")
        self.option = option
        self.what = what
        self.fix = fix


@dataclass(frozen=True)
class Layout:
    """What the user asked for. Every size is a positive whole number."""

    tp: int
    pp: int
    dp: int
    micro_batch: int
    accum: int
    ep: int = 1
    cp: int = 1

    def __post_init__(self) -> None:
        for option, value in self.options().items():
            if value < 1:
                raise PlanRefusal(
                    option, f"{value} is not a positive whole number", f"pass {option} 1 or more"
                )

    def options(self) -> dict[str, int]:
        return {
            "--tp": self.tp,
            "--pp": self.pp,
            "--dp": self.dp,
            "--ep": self.ep,
            "--cp": self.cp,
            "--micro-batch": self.micro_batch,
            "--accum": self.accum,
        }

    @property
    def ranks(self) -> int:
        return self.tp * self.pp * self.cp * self.dp

    @property
    def global_batch(self) -> int:
        return self.micro_batch * self.accum * self.dp

    @property
    def expert_span(self) -> int:
        """Consecutive ranks one EP group spans (with its TP and CP ranks)."""
        return self.tp * self.cp * self.ep

    def describe(self) -> str:
        parts = [f"TP{self.tp}", f"PP{self.pp}"]
        if self.cp > 1:
            parts.append(f"CP{self.cp}")
        parts.append(f"DP{self.dp}")
        text = " x ".join(parts)
        return f"{text} (EP{self.ep} within DP)" if self.ep > 1 else text


@dataclass(frozen=True)
class Plan:
    layout: Layout
    gpus_per_node: int
    nodes_available: int
    nodes: int
    gpus_per_node_used: int

    @property
    def ranks(self) -> int:
        return self.layout.ranks

    @property
    def global_batch(self) -> int:
        return self.layout.global_batch


def _check_tensor_parallel(layout: Layout, gpus: int) -> None:
    if layout.tp > gpus:
        raise PlanRefusal(
            "--tp",
            f"TP{layout.tp} is larger than a node's {gpus} GPUs; a TP group communicates on every layer",
            f"keep TP within a node: --tp {gpus} or less, a divisor of {gpus}",
        )
    if gpus % layout.tp:
        raise PlanRefusal(
            "--tp",
            f"TP{layout.tp} does not divide a node's {gpus} GPUs, "
            "so some TP groups would cross a node boundary",
            f"pass a --tp that divides {gpus}",
        )


def _check_expert_parallel(layout: Layout, gpus: int) -> None:
    if layout.ep == 1:
        return
    if layout.dp % layout.ep:
        raise PlanRefusal(
            "--ep",
            f"EP{layout.ep} does not divide DP{layout.dp}; expert parallelism splits the DP replicas",
            "pass an --ep that divides --dp",
        )
    span = layout.expert_span
    if span > gpus or gpus % span:
        raise PlanRefusal(
            "--ep",
            f"an EP group spans TP{layout.tp} x CP{layout.cp} x EP{layout.ep} = {span} GPUs, which crosses "
            f"a node boundary ({gpus} GPUs a node); its all-to-all would leave NVLink",
            f"keep EP within a node: TP x CP x EP must divide {gpus}",
        )


def _nodes(layout: Layout, gpus: int, available: int) -> tuple[int, int]:
    """(nodes, GPUs used on each)."""
    ranks = layout.ranks
    if ranks <= gpus:
        # One node, possibly part of it: a small run or a debug run.
        nodes, used = 1, ranks
    elif ranks % gpus:
        raise PlanRefusal(
            "--dp",
            f"{layout.describe()} = {ranks} ranks do not fill whole nodes of {gpus} GPUs "
            f"({ranks / gpus:.2f} nodes)",
            f"choose sizes whose product is a multiple of {gpus}, e.g. --dp {_fitting_dp(layout, gpus)}",
        )
    else:
        nodes, used = ranks // gpus, gpus
    if nodes > available:
        raise PlanRefusal(
            "--dp",
            f"{layout.describe()} = {ranks} ranks need {nodes} nodes of {gpus} GPUs; "
            f"the group has {available}",
            f"lower --dp or --pp until TP x PP x CP x DP is {available * gpus} or less",
        )
    return nodes, used


def _fitting_dp(layout: Layout, gpus: int) -> int:
    """The smallest DP above the asked one whose ranks fill whole nodes."""
    others = layout.tp * layout.pp * layout.cp
    dp = layout.dp + 1
    while (others * dp) % gpus:
        dp += 1
    return dp


def plan_layout(layout: Layout, gpus_per_node: int, nodes_available: int) -> Plan:
    """Where `layout` lands on a group of `nodes_available` nodes with `gpus_per_node` GPUs each."""
    if gpus_per_node < 1 or nodes_available < 1:
        raise ValueError(
            f"a group has at least one node and one GPU, not {nodes_available} x {gpus_per_node}"
        )
    _check_tensor_parallel(layout, gpus_per_node)
    _check_expert_parallel(layout, gpus_per_node)
    nodes, used = _nodes(layout, gpus_per_node, nodes_available)
    return Plan(
        layout=layout,
        gpus_per_node=gpus_per_node,
        nodes_available=nodes_available,
        nodes=nodes,
        gpus_per_node_used=used,
    )
