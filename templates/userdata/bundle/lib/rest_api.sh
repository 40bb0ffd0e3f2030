# shellcheck shell=bash
# The REST API on the head (gpucluster.bootstrap.rest_api): the JWT signing key written from
# its secret (never rendered, never echoed), and slurmrestd from its rendered unit, as its own
# system user, on the head's private address. Both steps do nothing on a cluster without
# rest_api, except that a head which had it removes slurmrestd, its unit and the key.

rest_api_on() { [[ "${REST_API}" == yes ]]; }

# auth/jwt loads the key when slurmctld (and slurmdbd) start and refuses one that others may
# read (auth_jwt.c: mode & 007): mode 600, owned by SlurmUser. Before slurmdbd and slurmctld
# start; a changed key restarts or reconfigures both, which load it only then.
write_jwt_key() {
  rest_api_on || return 0
  local arn target="${R}${JWT_KEY}" fresh
  arn="$(retry AWS_RETRIES aws --region "${REGION}" ssm get-parameter \
    --name "${PARAM_REST_API_JWT_SECRET_ARN}" --query Parameter.Value --output text)" ||
    die "cannot read SSM parameter ${PARAM_REST_API_JWT_SECRET_ARN}; deploy the Storage stack with rest_api first (the head role needs ssm:GetParameter on it)"
  mkdir -p "$(dirname "${target}")"
  fresh="$(mktemp "${target}.XXXXXX")"
  chmod 0600 "${fresh}"
  # The key is the secret's text as Secrets Manager generated it, without the line break
  # the CLI adds; it goes from the pipe to the private file and nowhere else.
  if ! aws --region "${REGION}" secretsmanager get-secret-value --secret-id "${arn}" \
    --query SecretString --output text | tr -d '\n' >"${fresh}"; then
    rm -f "${fresh}"
    die "cannot read the REST API's JWT key from secret ${arn}; the head role needs secretsmanager:GetSecretValue on it"
  fi
  if (($(wc -c <"${fresh}") < JWT_KEY_MIN_BYTES)); then
    rm -f "${fresh}"
    die "secret ${arn} holds fewer than ${JWT_KEY_MIN_BYTES} characters, too short a JWT signing key; put the Storage stack's generated key back"
  fi
  replace_if_changed "${fresh}" "${target}" 0600 slurm:slurm || return 0
  CONTROLLER_CONFIG_CHANGED=yes
  # Read by start_slurmdbd (lib/accounting.sh), which restarts slurmdbd on it.
  # shellcheck disable=SC2034
  SLURMDBD_CONFIG_CHANGED=yes
  log "wrote ${JWT_KEY} from ${arn}"
}

ensure_slurmrestd_user() {
  getent passwd "${SLURMRESTD_USER}" >/dev/null && return 0
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin "${SLURMRESTD_USER}" ||
    die "cannot create the system user ${SLURMRESTD_USER} that slurmrestd runs as"
  log "created system user ${SLURMRESTD_USER} for slurmrestd"
}

# The unit's ExecStart names the address: the head's private one, never every interface.
write_slurmrestd_address() {
  local address
  address="$(retry AWS_RETRIES imds local-ipv4)" ||
    die "cannot read the head's private address from IMDSv2 (local-ipv4)"
  [[ "${address}" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] ||
    die "instance metadata gave '${address}' as the head's private address, not an IPv4 address"
  if write_if_changed "${SLURMRESTD_ADDRESS_FILE}" 0644 <<<"${SLURMRESTD_ADDRESS_VARIABLE}=${address}"; then
    SLURMRESTD_CHANGED=yes
  fi
  SLURMRESTD_ADDRESS="${address}"
}

# A ping through slurmrestd with a short token of its own user: the answer needs slurmrestd
# listening, slurmctld accepting the cluster's key, and the token passed on. The headers go
# through a private file, so the token is on no command line.
slurmrestd_answers() {
  local headers status=1
  headers="$(mktemp)"
  chmod 0600 "${headers}"
  if scontrol token username="${SLURMRESTD_USER}" lifespan=60 |
    sed -n "s/^SLURM_JWT=\(.*\)$/X-SLURM-USER-TOKEN: \1\nX-SLURM-USER-NAME: ${SLURMRESTD_USER}/p" >"${headers}" &&
    [[ -s "${headers}" ]]; then
    curl -fsS -o /dev/null --max-time "${SLURMRESTD_PROBE_TIMEOUT}" -H "@${headers}" \
      "http://${SLURMRESTD_ADDRESS}:${SLURMRESTD_PORT}/slurm/${SLURMRESTD_API}/ping/" && status=0
  fi
  rm -f "${headers}"
  return "${status}"
}

# A head whose cluster turned rest_api off stops slurmrestd and removes what it installed.
remove_slurmrestd() {
  [[ -f "${R}${SLURMRESTD_UNIT_FILE}" ]] || return 0
  systemctl disable --now "${SLURMRESTD_UNIT}" ||
    die "cannot stop ${SLURMRESTD_UNIT}; see 'journalctl -u ${SLURMRESTD_UNIT}'"
  rm -f "${R}${SLURMRESTD_UNIT_FILE}" "${R}${SLURMRESTD_ADDRESS_FILE}" "${R}${JWT_KEY}"
  systemctl daemon-reload
  log "rest_api is off: stopped slurmrestd and removed its unit and the JWT key"
}

# After slurmctld answers (slurmrestd passes every request to it).
start_slurmrestd() {
  if ! rest_api_on; then
    remove_slurmrestd
    return 0
  fi
  SLURMRESTD_CHANGED=no
  ensure_slurmrestd_user
  write_slurmrestd_address
  if install_from_bundle "${ROLE_TREE}${SLURMRESTD_UNIT_FILE}" "${SLURMRESTD_UNIT_FILE}" 0644; then
    systemctl daemon-reload
    SLURMRESTD_CHANGED=yes
  fi
  # slurmrestd reads slurm.conf when it starts.
  if [[ "${CONTROLLER_CONFIG_CHANGED:-no}" == yes ]]; then
    SLURMRESTD_CHANGED=yes
  fi
  ensure_service "${SLURMRESTD_UNIT}" "${SLURMRESTD_CHANGED}"
  poll_until SLURMRESTD_START_TIMEOUT "waiting for slurmrestd on ${SLURMRESTD_ADDRESS}:${SLURMRESTD_PORT}" slurmrestd_answers ||
    die "slurmrestd does not answer a ping with a token from 'scontrol token' within ${SLURMRESTD_START_TIMEOUT} s; see 'journalctl -u ${SLURMRESTD_UNIT}' and /var/log/slurm/slurmctld.log ('auth/jwt': the key ${JWT_KEY})"
  log "slurmrestd answers on ${SLURMRESTD_ADDRESS}:${SLURMRESTD_PORT} with JWT"
}
