"""cdk-nag's AwsSolutions checks over the templates a synth wrote.

cdk-nag walks a construct tree and judges each resource by its L1 class
(`node instanceof CfnAutoScalingGroup`). gpucluster.constructs_lib builds resources as core
CfnResources (constructs_lib/cfn.py), which no rule recognizes, so the checks run on a
second app: each written template included with `cloudformation_include`, which rebuilds
every resource as its L1 from the template. Each resource gets the acknowledgements
(constructs_lib/nag.py) that its construct or an ancestor carried in the synthesized app,
and a finding in validation-report.json names the construct path of that app.

Runs only when asked (`cdk synth|deploy`, `gpucluster synth --nag`, CI, the tests):
loading cdk-nag and the L1s costs more than the synth itself.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from gpucluster.synth.cdk_runtime import cdk_context, new_app

ACKNOWLEDGED = "aws:cdk:acknowledged-rules"
LOGICAL_ID = "aws:cdk:logicalId"
REPORT = "validation-report.json"
INCLUDED = "Template"


class NagFindings(RuntimeError):
    """cdk-nag refused the templates; the report is at `report`."""

    def __init__(self, report: Path) -> None:
        super().__init__(f"ValidationFailed: cdk-nag found unacknowledged findings; see {report}")
        self.report = report


def report_findings(exc: NagFindings) -> int:
    """The line every synth prints for cdk-nag's findings (stderr); the exit code of a failed check."""
    print(
        f"error {exc.report}: cdk-nag found unacknowledged findings; fix each one it lists, or "
        "acknowledge it with a reason (constructs_lib/nag.py)",
        file=sys.stderr,
    )
    return 1


def check(assembly: Path) -> None:
    """Judge every stack template in the cloud assembly `assembly`; NagFindings when a
    finding is not acknowledged. The report is written to `assembly` either way."""
    import aws_cdk as cdk
    from aws_cdk import cloudformation_include as cfn_include
    from cdk_nag import AwsSolutionsChecks

    manifest = json.loads((assembly / "manifest.json").read_text())
    stacks = {
        artifact_id: artifact
        for artifact_id, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }
    with tempfile.TemporaryDirectory(prefix="gpucluster-nag-") as scratch:
        app = new_app(scratch, cdk_context())
        paths: dict[str, str] = {}  # included path -> path in the synthesized app
        for artifact_id, artifact in stacks.items():
            # The template brings its own bootstrap version check; this synthesizer adds none.
            stack = cdk.Stack(app, artifact_id, synthesizer=cdk.LegacyStackSynthesizer())
            template = assembly / artifact["properties"]["templateFile"]
            included = cfn_include.CfnInclude(stack, INCLUDED, template_file=str(template))
            resources = json.loads(template.read_text()).get("Resources", {})
            metadata = _metadata(assembly, artifact)
            for logical_id, path in _logical_ids(metadata).items():
                if logical_id not in resources:
                    continue  # a parameter, output or rule
                resource = included.get_resource(logical_id)
                paths[f"{artifact_id}/{INCLUDED}/{logical_id}"] = path
                for acknowledged in _acknowledgements_over(metadata, path):
                    resource.node.add_metadata(ACKNOWLEDGED, acknowledged)
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
        try:
            app.synth()
            failed = False
        except RuntimeError as exc:
            if "ValidationFailed" not in str(exc):
                raise
            failed = True
        _copy_report(Path(scratch) / REPORT, assembly / REPORT, paths)
    if failed:
        raise NagFindings(assembly / REPORT)


def _metadata(assembly: Path, artifact: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Construct path (with a leading "/") -> metadata entries of one stack: the manifest's
    and its additional metadata file's."""
    found: dict[str, list[dict[str, Any]]] = {k: list(v) for k, v in artifact.get("metadata", {}).items()}
    extra = artifact.get("additionalMetadataFile")
    if extra:
        for construct, entries in json.loads((assembly / extra).read_text()).items():
            found.setdefault(construct, []).extend(entries)
    return found


def _logical_ids(metadata: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Logical ID -> construct path (no leading "/") of each resource."""
    return {
        entry["data"]: construct.lstrip("/")
        for construct, entries in metadata.items()
        for entry in entries
        if entry["type"] == LOGICAL_ID
    }


def _acknowledgements_over(metadata: dict[str, list[dict[str, Any]]], path: str) -> list[dict[str, str]]:
    """The acknowledgements made on `path` or any construct above it."""
    parts = path.split("/")
    scopes = {"/" + "/".join(parts[:depth]) for depth in range(1, len(parts) + 1)}
    return [
        entry["data"]
        for construct, entries in metadata.items()
        if construct in scopes
        for entry in entries
        if entry["type"] == ACKNOWLEDGED and entry.get("data")
    ]


def _copy_report(report: Path, destination: Path, paths: dict[str, str]) -> None:
    """The report, each construct path in it as the synthesized app has it."""
    if report.exists():
        renamed = _renamed(json.loads(report.read_text()), paths)
        destination.write_text(json.dumps(renamed, indent=2) + "\n")


def _renamed(value: Any, paths: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {key: _renamed(item, paths) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed(item, paths) for item in value]
    if isinstance(value, str):
        return paths.get(value, value)
    return value
