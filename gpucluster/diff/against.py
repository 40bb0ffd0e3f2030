"""The config's freshly synthesized templates against a baseline directory: what `diff`
prints and what `validate --baseline` judges, computed one way for both."""

from __future__ import annotations

import tempfile
from pathlib import Path

from gpucluster.config import ClusterConfig
from gpucluster.diff.baseline import read_baseline
from gpucluster.diff.compare import diff_templates
from gpucluster.diff.report import DiffReport


def against_baseline(
    cfg: ClusterConfig, source: Path, baseline: Path, allow_replace: frozenset[str] = frozenset()
) -> DiffReport:
    """Read `baseline` (bad input is reported before synth starts), synthesize `cfg` (read
    from `source`) offline and compare."""
    before = read_baseline(baseline, cfg.name)
    # Imported once the inputs are known good: loading aws_cdk takes about a second.
    from gpucluster.synth.app import synthesize

    with tempfile.TemporaryDirectory(prefix="gpucluster-diff-") as outdir:
        # cdk-nag only reports and never changes a template: `synth` is where it runs.
        after = dict(
            synthesize(cfg, Path(outdir), nag=False, source=source, outdir_option="TMPDIR").templates
        )
    return diff_templates(before, after, allow_replace, region=cfg.region)
