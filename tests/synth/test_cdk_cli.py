"""`npx cdk synth -c config=...` works for every example and matches `gpucluster synth`."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import EXAMPLES, REPO

CDK = REPO / "node_modules" / ".bin" / "cdk"


@pytest.fixture(scope="module")
def cdk_cli_outputs(tmp_path_factory):
    if not CDK.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("node_modules/.bin/cdk missing: `make setup` runs `npm ci`")
        pytest.skip("CDK CLI not installed; run `make setup`")
    root = tmp_path_factory.mktemp("cdk-cli")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["CDK_DISABLE_VERSION_CHECK"] = "1"
    procs = {}
    for example in EXAMPLES:
        outdir = root / example.stem
        procs[example.stem] = (
            outdir,
            subprocess.Popen(
                [str(CDK), "synth", "--quiet", "--no-notices", "-c", f"config={example}", "-o", str(outdir)],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ),
        )
    results = {}
    for name, (outdir, proc) in procs.items():
        output, _ = proc.communicate(timeout=300)
        results[name] = (proc.returncode, output, outdir)
    yield results
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("example", [p.stem for p in EXAMPLES])
def test_cdk_cli_synth_matches_in_process_synth(cdk_cli_outputs, synthesized, example):
    code, output, outdir = cdk_cli_outputs[example]
    assert code == 0, output
    assert "Node 20 is end-of-life" not in output, "jsii must run on the wheel's Node"
    in_process = synthesized[example]
    for stack_name in in_process.templates:
        cli_template = (outdir / f"{stack_name}.template.json").read_bytes()
        assert cli_template == in_process.template_path(stack_name).read_bytes(), stack_name
