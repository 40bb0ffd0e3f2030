# shellcheck shell=bash
# Logging, step bookkeeping and small idempotent file helpers shared by every role.

CURRENT_STEP="start"

# stderr, so a function whose stdout is captured still logs.
log() { echo "gpucluster[${CURRENT_STEP}] $*" >&2; }

step() {
  CURRENT_STEP="$1"
  log "step $1"
  "$1"
}

# Copies a file from the bundle into place; returns 0 when the target changed, 1 when it
# already had this content, so callers restart a service only after a real change.
install_from_bundle() {
  local source="${BUNDLE_DIR}/$1" target="${R}$2" mode="$3"
  [[ -f "${source}" ]] || die "bundle file $1 is missing; the bundle is corrupt, redeploy the Cluster stack"
  if [[ -f "${target}" ]] && cmp -s "${source}" "${target}"; then
    return 1
  fi
  install -D -m "${mode}" "${source}" "${target}"
  log "installed $2"
  return 0
}

# Writes stdin to a file unless the file already holds exactly that; same return codes.
write_if_changed() {
  local target="${R}$1" mode="$2" content
  content="$(cat)"
  if [[ -f "${target}" ]] && [[ "$(cat "${target}")" == "${content}" ]]; then
    return 1
  fi
  mkdir -p "$(dirname "${target}")"
  printf '%s\n' "${content}" >"${target}.gpucluster-new"
  chmod "${mode}" "${target}.gpucluster-new"
  mv "${target}.gpucluster-new" "${target}"
  log "wrote $1"
  return 0
}

# replace_if_changed FRESH TARGET MODE OWNER: FRESH is a private file the caller wrote beside
# TARGET (mktemp in TARGET's directory, so the mv is atomic and no reader sees half a file).
# It replaces TARGET unless TARGET already holds the same bytes, in which case it is removed;
# either way TARGET ends with MODE and OWNER. Returns 0 when TARGET was replaced, 1 when not,
# so callers restart a service only after a real change.
replace_if_changed() {
  local fresh="$1" target="$2" mode="$3" owner="$4" replaced=1
  if [[ -f "${target}" ]] && cmp -s "${fresh}" "${target}"; then
    rm -f "${fresh}"
  else
    chmod "${mode}" "${fresh}"
    mv "${fresh}" "${target}"
    replaced=0
  fi
  chown "${owner}" "${target}"
  chmod "${mode}" "${target}"
  return "${replaced}"
}

# Appends a line to a file unless it is already there.
ensure_line() {
  local file="${R}$1" line="$2"
  mkdir -p "$(dirname "${file}")"
  touch "${file}"
  if ! grep -qxF -- "${line}" "${file}"; then
    printf '%s\n' "${line}" >>"${file}"
    log "added to $1: ${line}"
  fi
}

# retry NAME cmd...: NAME is a retry count of the boot budget (conf/cluster.sh), so every
# retry is accounted for in gpucluster.bootstrap.boot_budget.
retry() {
  [[ "$1" =~ ^[A-Z][A-Z_]*$ ]] ||
    die "retry: '$1' is not the name of an attempt count in conf/cluster.sh (gpucluster.bootstrap.boot_budget); the bundle is inconsistent, redeploy"
  local attempts="${!1}" attempt
  shift
  for ((attempt = 1; attempt <= attempts; attempt++)); do
    if "$@"; then
      return 0
    fi
    log "attempt ${attempt}/${attempts} of '$1' failed"
    sleep "$((attempt * RETRY_BACKOFF))"
  done
  return 1
}

# poll_until NAME_TIMEOUT WAITING cmd...: runs cmd every NAME_POLL seconds until it
# succeeds, for at most NAME_TIMEOUT seconds; both are boot budget values in
# conf/cluster.sh (gpucluster.bootstrap.boot_budget). WAITING, unless empty, is logged before each
# sleep. Returns 1 when the time ran out, so the caller dies saying what to do.
poll_until() {
  [[ "$1" =~ ^[A-Z][A-Z_]*_TIMEOUT$ ]] ||
    die "poll_until: '$1' is not the name of a wait in conf/cluster.sh (gpucluster.bootstrap.boot_budget); the bundle is inconsistent, redeploy"
  local limit="${!1}" poll_name="${1%_TIMEOUT}_POLL" waiting="$2" waited=0
  local poll="${!poll_name}"
  shift 2
  until "$@"; do
    if ((waited >= limit)); then
      return 1
    fi
    [[ -z "${waiting}" ]] || log "${waiting}"
    sleep "${poll}"
    waited=$((waited + poll))
  done
}

imds_token() {
  curl -fsS -X PUT "http://169.254.169.254/latest/api/token" \
    -H "X-aws-ec2-metadata-token-ttl-seconds: 300"
}

# IMDSv2 only: the launch templates require tokens.
imds() {
  local token
  token="$(imds_token)" || return 1
  curl -fsS -H "X-aws-ec2-metadata-token: ${token}" "http://169.254.169.254/latest/meta-data/$1"
}

instance_id() {
  retry AWS_RETRIES imds instance-id ||
    die "cannot read the instance id from IMDSv2; is the metadata service enabled with tokens?"
}

service_active() { systemctl is-active --quiet "$1"; }

# Enables a unit and starts it, or restarts it when its configuration changed.
ensure_service() {
  local unit="$1" changed="$2" action=""
  if ! systemctl is-enabled --quiet "${unit}"; then
    systemctl enable "${unit}"
  fi
  if [[ "${changed}" == yes ]] && service_active "${unit}"; then
    action=restart
  elif ! service_active "${unit}"; then
    action=start
  fi
  if [[ -n "${action}" ]] && ! systemctl "${action}" "${unit}"; then
    die "${unit} did not ${action}; see 'journalctl -u ${unit}' and rerun $0 once it is fixed"
  fi
  service_active "${unit}" || die "${unit} is not active after ${action:-enable}; see 'journalctl -u ${unit}'"
}
