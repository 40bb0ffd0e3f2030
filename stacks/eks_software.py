"""What the EKS stack installs into the cluster, in order, so that Slurm runs once it deploys:
the NVIDIA and EFA device plugins (the resources the NodeSets ask for), the vendored Slinky
charts (CRDs, then the operator, after the cert-manager add-on its webhook needs), the
objects gpucluster writes itself (namespace, state storage class, the FSx volume with the
Storage stack's real facts), with a database the password Secret slurmdbd reads
(accounting_secret), then the `slurm` chart with the generated values.

Every value and object comes from the functions that write `<output>/k8s/` at synth
(gpucluster.eks), so what deploys is what CI reviews, less the placeholders.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_ssm as ssm

from gpucluster.constructs_lib.eks.accounting_secret import AccountingPasswordSecret
from gpucluster.constructs_lib.eks.versions import CERT_MANAGER, EFA_DEVICE_PLUGIN, NVIDIA_DEVICE_PLUGIN
from gpucluster.eks import device_plugins, manifests, slinky_values, storage
from gpucluster.package_files import DATA
from gpucluster.resolved import ResolvedCluster
from gpucluster.stacks.eks_stack import EksStack, HelmRelease

# The vendored charts, shipped in the package (pyproject.toml package-data).
CHARTS = DATA / "slinky" / manifests.SLINKY_TAG / "helm"
NVIDIA_CHART = DATA / "nvidia-device-plugin" / NVIDIA_DEVICE_PLUGIN / "helm" / "nvidia-device-plugin"
EFA_CHART = DATA / "eks-charts" / EFA_DEVICE_PLUGIN / "helm" / "aws-efa-k8s-device-plugin"
# Slinky's documented installation: the operator in `slinky`, Slurm in `slurm`.
OPERATOR_NAMESPACE = "slinky"
DEVICE_PLUGIN_NAMESPACE = "kube-system"


def install_cluster_software(stack: EksStack, resolved: ResolvedCluster) -> None:
    stack.add_helm_release(
        HelmRelease(
            id="NvidiaDevicePlugin",
            chart_dir=NVIDIA_CHART,
            release="nvidia-device-plugin",
            namespace=DEVICE_PLUGIN_NAMESPACE,
            values=device_plugins.nvidia_values(),
        )
    )
    if device_plugins.efa_instance_types(resolved):
        stack.add_helm_release(
            HelmRelease(
                id="EfaDevicePlugin",
                chart_dir=EFA_CHART,
                release="aws-efa-k8s-device-plugin",
                namespace=DEVICE_PLUGIN_NAMESPACE,
                values=device_plugins.efa_values(resolved),
            )
        )
    stack.add_helm_release(
        HelmRelease(
            id="SlinkyCrds",
            chart_dir=CHARTS / "slurm-operator-crds",
            release="slurm-operator-crds",
            namespace=OPERATOR_NAMESPACE,
        )
    )
    operator = stack.add_helm_release(
        HelmRelease(
            id="SlinkyOperator",
            chart_dir=CHARTS / "slurm-operator",
            release="slurm-operator",
            namespace=OPERATOR_NAMESPACE,
            values=slinky_values.operator_values(),
            # Chart.yaml names it (disabled by crds.enabled: false); helm wants it present.
            subcharts=(CHARTS / "slurm-operator-crds",),
        )
    )
    # The chart's Certificate and Issuer are cert-manager kinds, refused until it runs.
    operator.node.add_dependency(stack.add_ons[CERT_MANAGER])
    facts = stack.fsx_facts() if resolved.fsx_lustre else storage.placeholder_facts(resolved)
    objects = stack.add_manifest("SlurmObjects", manifests.objects(resolved, facts))
    # The topology writer's ClusterRole and binding are among these objects: until they exist
    # every run is refused (HTTP 403), and on teardown they must outlive the function.
    stack.topology_writer.function.node.add_dependency(objects)
    add_accounting_password(stack, resolved)
    stack.add_helm_release(
        HelmRelease(
            id="Slurm",
            chart_dir=CHARTS / "slurm",
            release="slurm",
            namespace=storage.NAMESPACE,
            values=deployed_slurm_values(stack, resolved),
        )
    )


def add_accounting_password(stack: EksStack, resolved: ResolvedCluster) -> None:
    """With a database the cluster creates, the Secret slurmdbd reads its password from, written
    after the objects that hold its namespace and its writer's Role, before the `slurm` chart."""
    accounting = resolved.accounting
    if accounting is None or accounting.database is None:
        return
    secret_arn = ssm.StringParameter.value_for_string_parameter(
        stack, accounting.database.secret_arn_parameter
    )
    writer = AccountingPasswordSecret(stack, "AccountingPassword", stack.cluster, secret_arn, resolved.tags)
    stack.add_step(writer.resource)


def deployed_slurm_values(stack: EksStack, resolved: ResolvedCluster) -> dict[str, Any]:
    """slinky_values.slurm_values with the accounting database's address read from its SSM
    parameter at deploy, where synth's k8s/ file names the parameter."""
    values = slinky_values.slurm_values(resolved)
    accounting = resolved.accounting
    if accounting is not None and accounting.database is not None:
        host = ssm.StringParameter.value_for_string_parameter(stack, accounting.database.host_parameter)
        values["accounting"]["storageConfig"]["host"] = host
    return values
