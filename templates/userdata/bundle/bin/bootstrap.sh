#!/bin/bash
# gpucluster node bootstrap: bootstrap.sh --role head|login|compute [--group NAME]
#
# Every step is a function in lib/*.sh that checks before it acts, so running this
# script again on a configured node changes nothing. Absolute paths go through ${R}
# (lib/entry.sh) so the tests can run it inside a scratch root.
set -Eeuo pipefail

BUNDLE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly BUNDLE_DIR
# shellcheck source=../lib/entry.sh
source "${BUNDLE_DIR}/lib/entry.sh"
# shellcheck source=../lib/heartbeat.sh
source "${BUNDLE_DIR}/lib/heartbeat.sh"
# shellcheck source=../lib/system.sh
source "${BUNDLE_DIR}/lib/system.sh"
# shellcheck source=../lib/packages.sh
source "${BUNDLE_DIR}/lib/packages.sh"
# shellcheck source=../lib/metadata.sh
source "${BUNDLE_DIR}/lib/metadata.sh"
# shellcheck source=../lib/slurm_package.sh
source "${BUNDLE_DIR}/lib/slurm_package.sh"
# shellcheck source=../lib/logs.sh
source "${BUNDLE_DIR}/lib/logs.sh"
# shellcheck source=../lib/munge.sh
source "${BUNDLE_DIR}/lib/munge.sh"
# shellcheck source=../lib/storage.sh
source "${BUNDLE_DIR}/lib/storage.sh"
# shellcheck source=../lib/containers.sh
source "${BUNDLE_DIR}/lib/containers.sh"
# shellcheck source=../lib/ecr.sh
source "${BUNDLE_DIR}/lib/ecr.sh"
# shellcheck source=../lib/gpu.sh
source "${BUNDLE_DIR}/lib/gpu.sh"
# shellcheck source=../lib/slurm.sh
source "${BUNDLE_DIR}/lib/slurm.sh"
# shellcheck source=../lib/ssh.sh
source "${BUNDLE_DIR}/lib/ssh.sh"
# shellcheck source=../lib/users.sh
source "${BUNDLE_DIR}/lib/users.sh"
# shellcheck source=../lib/accounting.sh
source "${BUNDLE_DIR}/lib/accounting.sh"
# shellcheck source=../lib/rest_api.sh
source "${BUNDLE_DIR}/lib/rest_api.sh"
# shellcheck source=../lib/roles.sh
source "${BUNDLE_DIR}/lib/roles.sh"

usage() {
  echo "usage: $0 --role head|login|compute [--group NAME]" >&2
  exit 64
}

parse_args() {
  ROLE=""
  GROUP=""
  while (($# > 0)); do
    case "$1" in
      --role) ROLE="${2:-}"; shift 2 ;;
      --group) GROUP="${2:-}"; shift 2 ;;
      *) usage ;;
    esac
  done
  case "${ROLE}" in
    head | login) [[ -z "${GROUP}" ]] || usage ;;
    compute) [[ -n "${GROUP}" ]] || usage ;;
    *) usage ;;
  esac
}

main() {
  parse_args "$@"
  if [[ "${ROLE}" == compute ]]; then
    load_group "${GROUP}"
  fi
  arm_failure_trap
  log "bootstrap of a ${ROLE} node${GROUP:+ of group ${GROUP}} in cluster ${CLUSTER_NAME} starts"
  case "${ROLE}" in
    head) run_head ;;
    login) run_login ;;
    compute) run_compute ;;
  esac
  log "bootstrap of a ${ROLE} node finished"
}

main "$@"
