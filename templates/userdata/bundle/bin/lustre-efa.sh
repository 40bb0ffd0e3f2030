#!/bin/bash
# Re-creates the LNet EFA interfaces at boot (gpucluster-lustre-efa.service): LNet
# configuration lives in the kernel and is gone after a reboot, and the Lustre mount in
# fstab would otherwise fall back to TCP. Usage: lustre-efa.sh --group NAME
set -Eeuo pipefail

BUNDLE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly BUNDLE_DIR
# shellcheck source=../lib/entry.sh
source "${BUNDLE_DIR}/lib/entry.sh"
readonly ROLE=compute

# shellcheck source=../lib/system.sh
source "${BUNDLE_DIR}/lib/system.sh"
# shellcheck source=../lib/packages.sh
source "${BUNDLE_DIR}/lib/packages.sh"
# shellcheck source=../lib/storage.sh
source "${BUNDLE_DIR}/lib/storage.sh"
# shellcheck source=../lib/roles.sh
source "${BUNDLE_DIR}/lib/roles.sh"

[[ "${1:-}" == --group && -n "${2:-}" ]] || { echo "usage: $0 --group NAME" >&2; exit 64; }
load_group "$2"
# A kernel that changed since the bootstrap (a pin lifted by hand) needs its own client.
step ensure_lustre_client
step require_kefalnd
step configure_lustre_efa
