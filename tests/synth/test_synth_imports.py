"""What a synth loads: the AWS SDK costs every synth about a tenth of a second of the
2x-the-empty-app budget (`make bench`), and no synth calls AWS, so none may import it.
Agent modules whose names or records the synth reads must keep boto3 out of import time."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

PROBE = """
import sys, tempfile
from gpucluster.synth.cdk_runtime import use_wheel_node
use_wheel_node()
from gpucluster.config.loader import load_config
from gpucluster.synth.app import synthesize
synthesize(load_config(sys.argv[1]), tempfile.mkdtemp(), nag=False)
print(sorted(name for name in ("boto3", "botocore") if name in sys.modules))
"""


def test_a_synth_never_imports_the_aws_sdk():
    # p5-eks-slinky: the EKS stack packages the node-group scaler without importing it.
    for example in ("default", "mixed", "p5-eks-slinky"):
        result = subprocess.run(
            [sys.executable, "-c", PROBE, str(REPO / "examples" / f"{example}.yaml")],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        assert result.stdout.strip().splitlines()[-1] == "[]", (example, result.stdout)
