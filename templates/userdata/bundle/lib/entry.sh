# shellcheck shell=bash
# What every entry point under bin/ loads first, after it set BUNDLE_DIR to the bundle's
# root: the scratch-root prefix, the rendered cluster values, logging and the failure trap.
# Absolute paths go through ${R}: empty on a node, a scratch root in the tests
# (GPUCLUSTER_ROOT).

readonly R="${GPUCLUSTER_ROOT:-}"

# shellcheck source=../conf/cluster.sh
source "${BUNDLE_DIR}/conf/cluster.sh"
# shellcheck source=../lib/common.sh
source "${BUNDLE_DIR}/lib/common.sh"
# shellcheck source=../lib/failure.sh
source "${BUNDLE_DIR}/lib/failure.sh"
