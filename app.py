"""CDK entry point: `npx cdk synth -c config=examples/default.yaml`."""

from gpucluster.cdk_runtime import use_wheel_node

use_wheel_node()

from gpucluster.synth import app_from_context  # noqa: E402

app_from_context().synth()
