"""Build the CDK app for a config and synthesize it in-process.

One way through: the config is resolved once (gpucluster.resolved), the node files are
rendered from that (gpucluster.bootstrap), and the stacks are built from both
(gpucluster.stacks). `cdk synth` (through app.py) and `gpucluster synth` both call
`build_app`, with the same context from cdk.json, so they write the same templates.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpucluster import names
from gpucluster.bad_input import BadInput, report
from gpucluster.bootstrap.node_files import render_node_files
from gpucluster.bootstrap.userdata import UserDataTooLarge
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.env_problem import EnvironmentProblem, report_problem
from gpucluster.node_files import NodeFiles
from gpucluster.output_files import replacing
from gpucluster.resolved import ResolvedCluster, resolve
from gpucluster.synth.cdk_runtime import cdk_context, new_app, use_wheel_node
from gpucluster.synth.runtime_problems import cdk_runtime
from gpucluster.synth.tag_limit import refuse_tag_overflow

if TYPE_CHECKING:  # imported lazily at run time: loading aws_cdk costs about a second
    import aws_cdk as cdk


@dataclass(frozen=True)
class SynthResult:
    outdir: Path
    templates: dict[str, dict[str, Any]]
    # What the stacks were built from: the summary measures it rather than render it again.
    node_files: NodeFiles
    notes: tuple[str, ...] = ()  # stale files an earlier synth wrote, kept (gpucluster.output_files)

    def template_path(self, stack: str) -> Path:
        return self.outdir / f"{stack}.template.json"


def build_app(
    cfg: ClusterConfig,
    outdir: str | None = None,
    context: dict[str, Any] | None = None,
    source: str | Path = "<config>",
) -> cdk.App:
    """The cluster's app. cdk-nag judges what it writes (synth_app)."""
    return _build_app(*rendered(cfg, source), outdir, context)


def rendered(cfg: ClusterConfig, source: str | Path = "<config>") -> tuple[ResolvedCluster, NodeFiles]:
    """The config resolved once and its node files rendered once. A config whose user-data
    cannot fit is bad input in `source`, the config file."""
    resolved = resolve(cfg)
    try:
        return resolved, render_node_files(resolved)
    except UserDataTooLarge as exc:
        raise BadInput(
            source, "(user-data)", str(exc).rstrip("."), "shorten what the config puts into user-data"
        ) from None


def _build_app(
    resolved: ResolvedCluster, node_files: NodeFiles, outdir: str | None, context: dict[str, Any] | None
) -> cdk.App:
    use_wheel_node()
    import aws_cdk as cdk

    from gpucluster.constructs_lib.cfn_tags import tagging_every_resource
    from gpucluster.constructs_lib.cluster_network import TAG_KEYS as network_tag_keys

    app = new_app(outdir, context)
    # The constructs write these tags into each resource they build (gpucluster.constructs_lib.cfn_tags);
    # Tags.of(app) gives them to the stacks and to any L1 added to the app.
    with tagging_every_resource(resolved.tags, (names.ROLE_TAG, names.GROUP_TAG, *network_tag_keys)):
        _add_stacks(app, resolved, node_files)
    for key, value in resolved.tags.items():
        cdk.Tags.of(app).add(key, value)
    return app


def synth_app(app: cdk.App, *, nag: bool, source: str | Path = "<config>") -> Path:
    """Synthesize `app`; the cloud assembly's directory. A resource with more tags than AWS
    allows is bad input in `source`, the config file. `nag=True` runs cdk-nag's
    AwsSolutions checks over the templates (gpucluster.synth.nag), which raise NagFindings
    on an unacknowledged finding. They never change a template, and they cost more than
    the synth, so only what deploys (`cdk synth|deploy`), `gpucluster synth --nag`, CI and
    the test suite run them."""
    directory = Path(app.synth().directory)
    refuse_tag_overflow(directory, source)
    if nag:
        from gpucluster.synth.nag import check

        check(directory)
    return directory


def _add_stacks(app: cdk.App, resolved: ResolvedCluster, node_files: NodeFiles) -> None:
    import aws_cdk as cdk

    from gpucluster.stacks.cluster_stack import ClusterStack
    from gpucluster.stacks.monitoring_stack import MonitoringStack
    from gpucluster.stacks.network_stack import NetworkStack
    from gpucluster.stacks.storage_stack import StorageStack

    env = cdk.Environment(account=resolved.account, region=resolved.region)
    stack_names = resolved.names.stacks
    description = f"gpucluster {resolved.name}"
    network = NetworkStack(
        app,
        stack_names["network"],
        resolved=resolved,
        env=env,
        description=f"{description}: network and security groups",
    )
    storage = StorageStack(
        app,
        stack_names["storage"],
        resolved=resolved,
        subnet_id=network.network.subnet_id,
        storage_security_group_id=network.security_groups.storage.att("GroupId"),
        database_subnet_ids=network.database_subnet_ids,
        database_security_group_id=network.database_security_group_id,
        env=env,
        description=f"{description}: file systems and the munge key (retained)",
    )
    if resolved.orchestrator == "eks":
        from gpucluster.synth.eks_app import add_eks_stack

        add_eks_stack(app, resolved, network, storage, env=env, description=description)
        return
    ClusterStack(
        app,
        stack_names["cluster"],
        resolved=resolved,
        node_files=node_files,
        vpc_id=network.network.vpc_id,
        subnet_id=network.network.subnet_id,
        nodes_security_group_id=network.security_groups.nodes.att("GroupId"),
        efa_security_group_id=network.security_groups.efa.att("GroupId"),
        head_security_group_id=network.head_security_group_id,
        env=env,
        description=f"{description}: head, login and compute nodes",
    ).add_stack_dependency(storage, "nodes mount the file systems at boot")
    MonitoringStack(
        app,
        stack_names["monitoring"],
        resolved=resolved,
        env=env,
        description=f"{description}: dashboard and alarms",
    ).add_stack_dependency(storage, "the FSx alarm reads the file system id the Storage stack publishes")


def app_from_context() -> tuple[cdk.App, Path]:
    """The app `cdk synth -c config=PATH` runs (app.py), and PATH."""
    use_wheel_node()
    import aws_cdk as cdk

    from gpucluster.synth.cdk_context import config_path

    # The CLI hands cdk.json's context and every -c value to the app through
    # the environment; a bare App reads them, and build_app's App does too.
    context = cdk.App().node.get_all_context()
    path = config_path(context, cdk_context())
    return build_app(load_config(path), source=path), path


def cdk_app_main() -> None:
    """Run the app for the CDK CLI; input problems end with exit 2 and no traceback, the
    CDK runtime's refusals with exit 1, and what `cdk deploy` ships is always checked by
    cdk-nag (a finding: exit 1)."""
    from gpucluster.synth.nag import NagFindings, report_findings

    try:
        # The CDK CLI names the cloud assembly's directory (its --output) in CDK_OUTDIR.
        with cdk_runtime(os.environ.get("CDK_OUTDIR", "cdk.out")):
            app, path = app_from_context()
            synth_app(app, nag=True, source=path)
    except BadInput as exc:
        raise SystemExit(report(exc)) from None
    except EnvironmentProblem as exc:
        raise SystemExit(report_problem(exc)) from None
    except NagFindings as exc:
        raise SystemExit(report_findings(exc)) from None


def synthesize(
    cfg: ClusterConfig,
    outdir: str | Path,
    nag: bool = False,
    source: str | Path = "<config>",
    outdir_option: str = "--output",
) -> SynthResult:
    """The templates in `outdir`; byte-identical with or without `nag`, which only checks.

    What an earlier synthesize wrote into `outdir` and this one did not (another cluster's
    templates) is removed; a directory that cannot be written is bad input (`outdir_option`).
    The CDK runtime's refusals (no Node, an unsafe jsii cache, a full disk) raise
    EnvironmentProblem, whose fix names `outdir_option` to pick another directory."""
    from gpucluster.synth.nag import REPORT, NagFindings

    outdir = Path(outdir)
    refused = False
    with cdk_runtime(outdir, outdir_option), replacing(outdir, "synth", outdir_option) as output:
        resolved, node_files = rendered(cfg, source)
        app = _build_app(resolved, node_files, str(output.staging), cdk_context())
        try:
            synth_app(app, nag=nag, source=source)
        except NagFindings:
            refused = True  # the templates and cdk-nag's report are written all the same
        if resolved.orchestrator == "eks":
            _write_manifests(resolved, output.staging / K8S_DIR)
    if refused:
        raise NagFindings(outdir / REPORT)
    return SynthResult(
        outdir=outdir,
        templates=written_templates(outdir),
        node_files=node_files,
        notes=tuple(output.notes()),
    )


STACK_ARTIFACT = "aws:cloudformation:stack"
# Beside the templates on EKS: the Slinky charts' values and the Kubernetes objects, so CI
# can diff and review them like the templates.
K8S_DIR = "k8s"


def _write_manifests(resolved: ResolvedCluster, directory: Path) -> None:
    from gpucluster.eks.manifests import render_manifests

    for relative, text in sorted(render_manifests(resolved).items()):
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def written_templates(directory: Path) -> dict[str, dict[str, Any]]:
    """Each stack's template as written to the cloud assembly, by stack name: read from the
    files the manifest names rather than passed back through jsii (Node parses each file
    again and the JSON crosses the pipe: a few percent of a synth)."""
    manifest = json.loads((directory / "manifest.json").read_text())
    return {
        artifact.get("properties", {}).get("stackName", artifact_id): json.loads(
            (directory / artifact["properties"]["templateFile"]).read_text()
        )
        for artifact_id, artifact in manifest["artifacts"].items()
        if artifact["type"] == STACK_ARTIFACT
    }
