# shellcheck shell=bash
# The munge key comes from Secrets Manager through the instance role. It is written
# straight to a root-only file and never echoed, so it stays out of logs and user-data.

install_munge_key() {
  local key="${R}/etc/munge/munge.key" fresh changed=no size
  mkdir -p "${R}/etc/munge"
  fresh="$(mktemp "${R}/etc/munge/.munge.key.XXXXXX")"
  chmod 0400 "${fresh}"
  # The secret string is the key; the CLI's text output adds a newline that is not part of it.
  if ! aws --region "${REGION}" secretsmanager get-secret-value --secret-id "${MUNGE_SECRET}" \
    --query SecretString --output text | tr -d '\n' >"${fresh}"; then
    rm -f "${fresh}"
    die "cannot read secret ${MUNGE_SECRET}; the instance role needs secretsmanager:GetSecretValue on it and the Storage stack must be deployed"
  fi
  size="$(wc -c <"${fresh}")"
  if ((size < 32)); then
    rm -f "${fresh}"
    die "secret ${MUNGE_SECRET} holds ${size} bytes; munge needs at least 32. Redeploy the Storage stack to regenerate it"
  fi
  if replace_if_changed "${fresh}" "${key}" 0400 munge:munge; then
    changed=yes
    log "munge key installed from ${MUNGE_SECRET}"
  fi
  ensure_service munge "${changed}"
}
