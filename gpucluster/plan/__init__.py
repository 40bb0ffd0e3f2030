"""`gpucluster plan`: how a parallel layout (TP, PP, CP, EP, DP) lands on a compute group."""

from gpucluster.plan.layout import Layout, Plan, PlanRefusal, plan_layout

__all__ = ["Layout", "Plan", "PlanRefusal", "plan_layout"]
