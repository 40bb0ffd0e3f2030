"""CDK entry point: `npx cdk synth -c config=examples/default.yaml`."""

from gpucluster.synth.cdk_runtime import use_wheel_node

use_wheel_node()

from gpucluster.synth.app import cdk_app_main  # noqa: E402

cdk_app_main()
