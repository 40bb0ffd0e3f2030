"""`gpucluster diff`: what deploying freshly synthesized templates would do to a baseline.

One module per concern, importing downwards: template_values (reading templates),
asset_hashes and normalize (what is not a change), baseline (loading `--baseline`),
classify and replacements (the CloudFormation update rules, from resource_schemas and
property_rules), compare (the per-stack diff), report (its result), table and verdict
(what is printed), against (synth and compare, for `diff` and `validate --baseline`).
The command's wiring (config, synth, exit code) is the `diff` verb in gpucluster.cli.
"""

from gpucluster.diff.against import against_baseline
from gpucluster.diff.asset_hashes import ASSET_HASH, mask_asset_hashes
from gpucluster.diff.baseline import BaselineError, load_templates, read_baseline
from gpucluster.diff.compare import diff_templates
from gpucluster.diff.normalize import normalize_template
from gpucluster.diff.property_rules import Refusal
from gpucluster.diff.report import ChangeKind, DiffReport, ResourceChange, StackDiff
from gpucluster.diff.table import print_report
from gpucluster.diff.template_values import Template
from gpucluster.diff.verdict import HEAD_REPLACEMENT, verdict

__all__ = [
    "ASSET_HASH",
    "HEAD_REPLACEMENT",
    "BaselineError",
    "ChangeKind",
    "DiffReport",
    "Refusal",
    "ResourceChange",
    "StackDiff",
    "Template",
    "against_baseline",
    "diff_templates",
    "load_templates",
    "mask_asset_hashes",
    "normalize_template",
    "print_report",
    "read_baseline",
    "verdict",
]
