"""The accounting database's password in the cluster: what the EKS stack's password writer
(gpucluster/agents/accounting_secret.py, run as a CloudFormation custom resource) may do in
Kubernetes, with `accounting.database` only (an external slurmdbd needs no password here).

The narrowest RBAC that works: a Role in the Slurm namespace (no ClusterRole) that may create
Secrets there, since the API authorizes a create before the object has a name, so
resourceNames cannot narrow it; and update (the Create that finds the Secret there already
replaces it) and patch (an Update) of the one Secret slurmdbd reads, by name. No get or list:
the function never reads a Secret back.
"""

from __future__ import annotations

from typing import Any

from gpucluster.agents.accounting_secret_settings import KUBERNETES_GROUP
from gpucluster.eks.storage import ACCOUNTING_PASSWORD_SECRET, NAMESPACE
from gpucluster.eks.topology import RBAC_API
from gpucluster.resolved import ResolvedCluster

WRITER_ROLE = "gpucluster-accounting-password-writer"


def writer_rbac(resolved: ResolvedCluster) -> list[dict[str, Any]]:
    """The Role and RoleBinding of the writer's group; [] without a database the cluster creates."""
    if resolved.accounting is None or resolved.accounting.database is None:
        return []
    metadata = {"name": WRITER_ROLE, "namespace": NAMESPACE}
    return [
        {
            "apiVersion": f"{RBAC_API}/v1",
            "kind": "Role",
            "metadata": metadata,
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": [ACCOUNTING_PASSWORD_SECRET],
                    "verbs": ["patch", "update"],
                },
            ],
        },
        {
            "apiVersion": f"{RBAC_API}/v1",
            "kind": "RoleBinding",
            "metadata": dict(metadata),
            "roleRef": {"apiGroup": RBAC_API, "kind": "Role", "name": WRITER_ROLE},
            "subjects": [{"apiGroup": RBAC_API, "kind": "Group", "name": KUBERNETES_GROUP}],
        },
    ]
