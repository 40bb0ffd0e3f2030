# shellcheck shell=bash
# GPU services a compute node needs before its GPUs take work.

# On NVSwitch types (the catalog's nvswitch fact, NVSWITCH) CUDA reports the system not
# ready until NVIDIA Fabric Manager has trained the NVLink fabric; the DLAMI ships the
# service but does not start it on every image. The start can take seconds while the
# fabric trains, and the service exits when its version does not match the driver's, so
# it is watched for a bounded time rather than trusted once.
start_fabric_manager() {
  if [[ "${NVSWITCH}" != yes ]]; then
    log "no NVSwitch on this instance type: fabric manager not needed"
    return 0
  fi
  if ! systemctl is-enabled --quiet "${FABRIC_MANAGER_UNIT}"; then
    systemctl enable "${FABRIC_MANAGER_UNIT}" ||
      die "cannot enable ${FABRIC_MANAGER_UNIT}; is the nvidia-fabricmanager package of the driver's version installed ('dpkg -l | grep fabricmanager', 'nvidia-smi')? Install it, then rerun $0"
  fi
  if ! service_active "${FABRIC_MANAGER_UNIT}"; then
    systemctl start "${FABRIC_MANAGER_UNIT}" ||
      die "${FABRIC_MANAGER_UNIT} did not start; see 'journalctl -u ${FABRIC_MANAGER_UNIT}' and /var/log/fabricmanager.log (its version must match the driver's), then rerun $0"
  fi
  poll_until FABRIC_MANAGER_TIMEOUT "" service_active "${FABRIC_MANAGER_UNIT}" ||
    die "${FABRIC_MANAGER_UNIT} is not active after ${FABRIC_MANAGER_TIMEOUT} s; without it CUDA cannot use this NVSwitch node's GPUs. See 'journalctl -u ${FABRIC_MANAGER_UNIT}' and /var/log/fabricmanager.log (its version must match the driver's), then rerun $0"
  log "${FABRIC_MANAGER_UNIT} is active"
}

# DCGM's diagnostic (the pre-join health check runs it) runs inside nv-hostengine, the
# nvidia-dcgm service of the DLAMI's DCGM package; dcgmi only asks it. An image without the
# service skips the diagnostic, and the health check says so.
start_dcgm() {
  if ((DCGM_JOIN_LEVEL == 0)); then
    log "DCGM diagnostic before joining is off (health.dcgm_level_at_join: 0)"
    return 0
  fi
  if ! systemctl cat "${DCGM_UNIT}" >/dev/null 2>&1; then
    log "no ${DCGM_UNIT} service on this image: DCGM is absent and its diagnostic is skipped"
    return 0
  fi
  if ! service_active "${DCGM_UNIT}"; then
    systemctl enable --now "${DCGM_UNIT}" ||
      die "${DCGM_UNIT} did not start; see 'journalctl -u ${DCGM_UNIT}' (DCGM's version must suit the driver's), or set health.dcgm_level_at_join: 0 to join without DCGM's diagnostic"
  fi
  poll_until DCGM_START_TIMEOUT "" service_active "${DCGM_UNIT}" ||
    die "${DCGM_UNIT} is not active after ${DCGM_START_TIMEOUT} s; see 'journalctl -u ${DCGM_UNIT}', or set health.dcgm_level_at_join: 0 to join without DCGM's diagnostic"
  log "${DCGM_UNIT} is active"
}
