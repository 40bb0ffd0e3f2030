# shellcheck shell=bash
# The pinned Slurm (SLURM_VERSION, the source whose sha256 is SLURM_SOURCE_SHA256): the
# head builds it once per cluster into a package on the shared /home (EFS), and every
# node, the head included, installs that package. No other node compiles Slurm; a node
# that boots before the head has built it waits for the package (SLURM_PACKAGE_TIMEOUT).

slurm_package() {
  echo "${R}${SLURM_PACKAGE_DIR}/slurm-${SLURM_VERSION}-${SLURM_BUILD_KEY}.tar.gz"
}

# The source is a file asset of the Cluster stack in the bundle's bucket (no third-party
# download): its URL is the applied bundle's bucket and SLURM_SOURCE_KEY.
fetch_slurm_source() {
  local file="$1" pointer bucket url got
  if [[ -f "${file}" ]] && sha256sum --check --status <<<"${SLURM_SOURCE_SHA256}  ${file}"; then
    return 0
  fi
  read -r _ pointer <"${R}${APPLIED_BUNDLE}" || die "no bundle recorded in ${APPLIED_BUNDLE}; cannot tell the asset bucket"
  bucket="${pointer#s3://}"
  url="s3://${bucket%%/*}/${SLURM_SOURCE_KEY}"
  mkdir -p "$(dirname "${file}")"
  retry DOWNLOAD_RETRIES aws --region "${REGION}" s3 cp --only-show-errors "${url}" "${file}.part" ||
    die "cannot download the Slurm source ${url}; the head's role needs s3:GetObject on it (redeploy the Cluster stack)"
  if ! sha256sum --check --status <<<"${SLURM_SOURCE_SHA256}  ${file}.part"; then
    got="$(sha256sum "${file}.part" | awk '{print $1}')"
    rm -f "${file}.part"
    die "the Slurm source ${url} has sha256 ${got}, want ${SLURM_SOURCE_SHA256} (Slurm ${SLURM_VERSION}, commit ${SLURM_COMMIT}); it is not the pinned source, so it is not built. Redeploy the Cluster stack"
  fi
  mv "${file}.part" "${file}"
  log "Slurm source downloaded (sha256 verified)"
}

# Head only. The package is a tree under / (prefix /usr, as Ubuntu's packages lay Slurm
# out) with upstream's systemd units; it gets its final name only once complete.
build_slurm_package() {
  local package build source stage started path unit
  package="$(slurm_package)"
  if [[ -f "${package}" ]]; then
    log "Slurm ${SLURM_VERSION} package is on shared storage: ${package}"
    return 0
  fi
  build="${BUILD_DIR}"
  source="${build}/slurm-${SLURM_VERSION}"
  stage="${build}/slurm-stage"
  fetch_slurm_source "${DOWNLOAD_DIR}/slurm-${SLURM_VERSION}.tar.gz"
  rm -rf "${source}" "${stage}"
  mkdir -p "${build}"
  tar -xzf "${DOWNLOAD_DIR}/slurm-${SLURM_VERSION}.tar.gz" -C "${build}"
  [[ -d "${source}" ]] || die "the Slurm source did not unpack to slurm-${SLURM_VERSION}/"
  started=${SECONDS}
  log "building Slurm ${SLURM_VERSION} (${SLURM_CONFIGURE_FLAGS[*]}); log in ${build}/slurm-build.log"
  (cd "${source}" && ./configure "${SLURM_INSTALL_DIRS[@]}" "${SLURM_CONFIGURE_FLAGS[@]}") >"${build}/slurm-build.log" 2>&1 ||
    die "Slurm's configure failed; see ${build}/slurm-build.log and ${source}/config.log"
  make -C "${source}" -j "$(nproc)" >>"${build}/slurm-build.log" 2>&1 ||
    die "building Slurm failed; see ${build}/slurm-build.log"
  make -C "${source}" install DESTDIR="${stage}" >>"${build}/slurm-build.log" 2>&1 ||
    die "installing Slurm into ${stage} failed; see ${build}/slurm-build.log"
  # pam_slurm_adopt and the like: against the libslurm just built, so never a distribution's.
  for path in "${SLURM_CONTRIBS[@]}"; do
    make -C "${source}/${path}" install DESTDIR="${stage}" >>"${build}/slurm-build.log" 2>&1 ||
      die "building and installing Slurm's ${path} into ${stage} failed; see ${build}/slurm-build.log"
  done
  for unit in "${SLURM_UNITS[@]}"; do
    install -D -m 0644 "${source}/etc/${unit}.service" "${stage}/usr/lib/systemd/system/${unit}.service"
  done
  # configure leaves a feature out quietly when a header is missing.
  for path in "${SLURM_REQUIRED_FILES[@]}"; do
    [[ -e "${stage}${path}" ]] ||
      die "Slurm ${SLURM_VERSION} built without ${path}: a build dependency is missing (see ${build}/slurm-build.log)"
  done
  mkdir -p "$(dirname "${package}")"
  tar -czf "${package}.partial" -C "${stage}" usr
  mv "${package}.partial" "${package}"
  rm -rf "${source}" "${stage}"
  log "Slurm ${SLURM_VERSION} built in $((SECONDS - started)) s into ${package}"
}

# The system user Ubuntu's packages created (SlurmUser; the state on EFS is its own), with
# Debian's fixed id so that every node and a replaced head agree on the owner.
ensure_slurm_user() {
  if ! getent passwd slurm >/dev/null; then
    groupadd --system --gid "${SLURM_UID}" slurm
    useradd --system --uid "${SLURM_UID}" --gid slurm --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin slurm
  fi
}

install_slurm() {
  local package marker="${STATE_DIR}/slurm-${SLURM_VERSION}-${SLURM_BUILD_KEY}.installed"
  package="$(slurm_package)"
  if [[ -f "${marker}" && -f "${R}/usr/sbin/slurmd" ]]; then
    log "Slurm ${SLURM_VERSION} is installed"
    return 0
  fi
  poll_until SLURM_PACKAGE_TIMEOUT "waiting for the head to build ${package}" test -f "${package}" ||
    die "no Slurm ${SLURM_VERSION} package at ${package} after ${SLURM_PACKAGE_TIMEOUT} s; the head builds it on its first boot: see the head's ${BOOTSTRAP_LOG}"
  tar -xzf "${package}" -C "${R}/" --no-same-owner --no-overwrite-dir
  ensure_slurm_user
  systemctl daemon-reload
  mkdir -p "${STATE_DIR}"
  touch "${marker}"
  log "Slurm ${SLURM_VERSION} installed from ${package}"
}
