"""A layout planned on one compute group of a config: its GPUs from the catalog, its nodes
from the config (a Capacity Block group: the block's instance count, which `count` holds)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpucluster.bad_input import BadInput
from gpucluster.command_lines import command_line
from gpucluster.config import ClusterConfig, ComputeGroupConfig
from gpucluster.config.capacity import CapacityBlockCapacity
from gpucluster.group_option import chosen_group
from gpucluster.jobs.validation import job_path
from gpucluster.launch.torchrun import JOB
from gpucluster.plan.layout import Layout, Plan, PlanRefusal, plan_layout


@dataclass(frozen=True)
class GroupPlan:
    group: ComputeGroupConfig
    plan: Plan

    @property
    def node_source(self) -> str:
        capacity = self.group.capacity
        if isinstance(capacity, CapacityBlockCapacity):
            return f"Capacity Block {capacity.reservation_id}"
        return f"count in the config ({capacity.type})"

    def rows(self) -> list[tuple[str, str]]:
        plan, layout, group = self.plan, self.plan.layout, self.group
        return [
            ("group", f"{group.name} ({group.instance_type}, {plan.gpus_per_node} GPUs a node)"),
            ("layout", layout.describe()),
            ("ranks", str(plan.ranks)),
            ("nodes", f"{plan.nodes} of {plan.nodes_available} ({self.node_source})"),
            ("GPUs per node used", f"{plan.gpus_per_node_used} of {plan.gpus_per_node}"),
            (
                "global batch",
                f"{plan.global_batch} = micro-batch {layout.micro_batch} x accumulation {layout.accum} "
                f"x DP {layout.dp}",
            ),
            ("submit", self.submit_line()),
        ]

    def submit_line(self) -> str:
        env: dict[str, str] = {}
        if self.plan.gpus_per_node_used != self.plan.gpus_per_node:
            env["TRAIN_NPROC_PER_NODE"] = str(self.plan.gpus_per_node_used)
        return command_line("sbatch", f"--nodes={self.plan.nodes}", job_path(self.group.name, JOB), env=env)


def plan_group(cfg: ClusterConfig, source: Path, group_name: str | None, layout: Layout) -> GroupPlan:
    """The layout on the group; a refusal is BadInput naming the option (exit 2)."""
    group = chosen_group(cfg, source, group_name)
    try:
        plan = plan_layout(layout, group.instance.gpu_count, group.count)
    except PlanRefusal as refusal:
        what = refusal.what
        if refusal.option == "--dp" and isinstance(group.capacity, CapacityBlockCapacity):
            what += f" (Capacity Block {group.capacity.reservation_id})"
        raise BadInput.option(refusal.option, f"group {group.name}: {what}", refusal.fix) from None
    return GroupPlan(group=group, plan=plan)
