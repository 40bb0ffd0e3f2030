# shellcheck shell=bash
# Ships this node's logs (bootstrap, slurmctld, slurmd) to the cluster's CloudWatch log
# group with the CloudWatch agent. The DLAMI carries the agent; an image without it gets
# the pinned release, checked by sha256 before it is installed.

install_cloudwatch_agent() {
  if [[ -x "${R}${CW_AGENT_CTL}" ]]; then
    log "CloudWatch agent is on the image"
    return 0
  fi
  fetch_verified "${CW_AGENT_URL}" "${CW_AGENT_DEB}" "${CW_AGENT_SHA256}" \
    "the CloudWatch agent pin (gpucluster/bootstrap/node_logs.py), or use an image that ships the agent"
  apt_update_once
  retry PACKAGE_RETRIES apt_get install -y -q --no-install-recommends "${DOWNLOAD_DIR}/${CW_AGENT_DEB}"
  [[ -x "${R}${CW_AGENT_CTL}" ]] ||
    die "${CW_AGENT_DEB} installed but ${CW_AGENT_CTL} is missing; the package layout changed, pin another agent release"
  log "CloudWatch agent ${CW_AGENT_VERSION} installed"
}

# fetch-config reads the configuration the Cluster stack keeps in SSM and (re)starts the
# agent (-s), so running it again after a stack update picks up a new configuration.
start_log_shipping() {
  install_cloudwatch_agent
  retry AWS_RETRIES "${R}${CW_AGENT_CTL}" -a fetch-config -m ec2 -s -c "ssm:${PARAM_LOG_AGENT_CONFIG}" ||
    die "the CloudWatch agent did not start with ssm:${PARAM_LOG_AGENT_CONFIG}; the instance role needs ssm:GetParameter on it and the Cluster stack must be deployed. See /opt/aws/amazon-cloudwatch-agent/logs/amazon-cloudwatch-agent.log"
  log "node logs ship to CloudWatch (configuration ${PARAM_LOG_AGENT_CONFIG})"
}
