# shellcheck shell=bash
# What happens when a step fails: the reason goes to the log, the console and an
# instance tag; a compute node also abandons its Auto Scaling launch, so the group
# replaces it instead of letting a broken node join Slurm.

FAILURE_REASON=""
JOINED=no
LIFECYCLE_MARKER="${STATE_DIR}/lifecycle-continue.done"

# A failure the operator can act on: the message says what went wrong and what to do.
die() {
  FAILURE_REASON="$*"
  log "FATAL: $*"
  exit 1
}

# From here on a failure no longer abandons the launch: slurmd runs and the node is in Slurm.
mark_joined() { JOINED=yes; }

on_error() {
  local status="$1" line="$2" command="$3"
  if [[ -z "${FAILURE_REASON}" ]]; then
    FAILURE_REASON="step ${CURRENT_STEP} failed: '${command}' exited ${status} (line ${line})"
  fi
}

on_exit() {
  local status=$?
  trap - EXIT ERR
  # The heartbeat loop (lib/heartbeat.sh) must not outlive the bootstrap, on success or not.
  if [[ -n "${HEARTBEAT_PID:-}" ]]; then
    stop_heartbeat
  fi
  if ((status == 0)); then
    return 0
  fi
  [[ -n "${FAILURE_REASON}" ]] || FAILURE_REASON="step ${CURRENT_STEP} failed with status ${status}"
  report_failure "${FAILURE_REASON}"
  # A rerun on a node that already joined must not abandon an instance in service.
  if [[ "${ROLE}" == compute && "${JOINED}" != yes && ! -f "${LIFECYCLE_MARKER}" ]]; then
    abandon_launch
  fi
  exit "${status}"
}

arm_failure_trap() {
  trap 'on_error $? ${LINENO} "${BASH_COMMAND}"' ERR
  trap on_exit EXIT
}

report_failure() {
  local reason="$1" banner
  banner="gpucluster: ${ROLE} bootstrap FAILED: ${reason}. Full log: ${BOOTSTRAP_LOG}"
  log "${banner}"
  if [[ -w "${R}/dev/console" ]]; then
    echo "${banner}" >"${R}/dev/console" || true
  fi
  tag_failure "${reason}" || log "could not tag the instance with the failure reason"
}

# EC2 tag values allow letters, digits, spaces and + - = . _ : / @ up to 256 characters;
# a reason quoting a multi-line command becomes one line.
tag_value() {
  printf '%s' "$1" | tr -c 'A-Za-z0-9 +=._:/@-' ' ' | head -c 250
}

tag_failure() {
  local iid
  iid="$(instance_id)" || return 1
  aws --region "${REGION}" ec2 create-tags --resources "${iid}" \
    --tags "Key=${FAILURE_TAG},Value=$(tag_value "$1")"
}

auto_scaling_group() {
  local token name iid
  # Instance metadata tags are optional on the launch template; fall back to the API.
  if token="$(imds_token)" && name="$(curl -fsS -H "X-aws-ec2-metadata-token: ${token}" \
    "http://169.254.169.254/latest/meta-data/tags/instance/aws:autoscaling:groupName")"; then
    echo "${name}"
    return 0
  fi
  iid="$(instance_id)" || return 1
  aws --region "${REGION}" autoscaling describe-auto-scaling-instances --instance-ids "${iid}" \
    --query 'AutoScalingInstances[0].AutoScalingGroupName' --output text
}

complete_launch() {
  local result="$1" asg iid
  asg="$(auto_scaling_group)" || return 1
  [[ -n "${asg}" && "${asg}" != None ]] || return 1
  iid="$(instance_id)" || return 1
  log "completing lifecycle hook ${LIFECYCLE_HOOK} of ${asg} with ${result}"
  aws --region "${REGION}" autoscaling complete-lifecycle-action \
    --lifecycle-hook-name "${LIFECYCLE_HOOK}" --auto-scaling-group-name "${asg}" \
    --instance-id "${iid}" --lifecycle-action-result "${result}"
}

abandon_launch() {
  complete_launch ABANDON ||
    log "could not send ABANDON; the hook times out after its heartbeat and Auto Scaling abandons the launch then"
}
