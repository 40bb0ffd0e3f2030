# shellcheck shell=bash
# Keeps a compute node's launch lifecycle hook alive while the node boots: Auto Scaling
# abandons the launch when HeartbeatTimeout passes without a heartbeat or a completion, and
# a slow but healthy boot (apt locks, slurmctld still coming up) must not be abandoned.
# Heartbeats stop after BOOT_BUDGET (gpucluster.bootstrap.boot_budget), so a hung bootstrap is still
# abandoned one HeartbeatTimeout later. A failed heartbeat is logged and never fails the boot.

HEARTBEAT_PID=""

send_heartbeat() {
  local asg="$1" iid="$2"
  aws --region "${REGION}" autoscaling record-lifecycle-action-heartbeat \
    --lifecycle-hook-name "${LIFECYCLE_HOOK}" --auto-scaling-group-name "${asg}" \
    --instance-id "${iid}" >/dev/null
}

# Runs in the background: HEARTBEAT_BEATS heartbeats, one every HEARTBEAT_INTERVAL.
# `sleep & wait` so stop_heartbeat's TERM ends the loop at once, sleep included.
heartbeat_loop() {
  local asg="$1" iid="$2" beat sleeper=""
  trap - ERR EXIT
  set +e
  trap '[[ -z "${sleeper}" ]] || kill "${sleeper}" 2>/dev/null; exit 0' TERM
  for ((beat = 1; beat <= HEARTBEAT_BEATS; beat++)); do
    sleep "${HEARTBEAT_INTERVAL}" &
    sleeper=$!
    wait "${sleeper}"
    sleeper=""
    if send_heartbeat "${asg}" "${iid}"; then
      log "lifecycle heartbeat ${beat}/${HEARTBEAT_BEATS} sent"
    else
      log "WARNING: lifecycle heartbeat ${beat}/${HEARTBEAT_BEATS} failed (the role needs autoscaling:RecordLifecycleActionHeartbeat); the boot goes on, but the hook times out ${HEARTBEAT_INTERVAL}+ s sooner"
    fi
  done
  log "boot budget of ${BOOT_BUDGET} s spent: no more heartbeats; unless the bootstrap completes the launch, Auto Scaling abandons it when the hook times out"
}

start_heartbeat() {
  local asg iid
  if [[ -n "${HEARTBEAT_PID}" ]]; then
    return 0
  fi
  if [[ -f "${LIFECYCLE_MARKER}" ]]; then
    log "lifecycle action already completed; no heartbeats needed"
    return 0
  fi
  if ! asg="$(auto_scaling_group)" || [[ -z "${asg}" || "${asg}" == None ]]; then
    log "WARNING: cannot find this instance's Auto Scaling group; no lifecycle heartbeats, so the hook's HeartbeatTimeout alone bounds this boot"
    return 0
  fi
  if ! iid="$(instance_id)"; then
    log "WARNING: cannot read the instance id; no lifecycle heartbeats"
    return 0
  fi
  heartbeat_loop "${asg}" "${iid}" &
  HEARTBEAT_PID=$!
  log "lifecycle heartbeats every ${HEARTBEAT_INTERVAL} s for ${asg} (pid ${HEARTBEAT_PID})"
}

# Called once the launch is completed, and on exit when the bootstrap fails.
stop_heartbeat() {
  if [[ -z "${HEARTBEAT_PID}" ]]; then
    return 0
  fi
  kill "${HEARTBEAT_PID}" 2>/dev/null || true
  wait "${HEARTBEAT_PID}" 2>/dev/null || true
  log "lifecycle heartbeats stopped"
  HEARTBEAT_PID=""
}
