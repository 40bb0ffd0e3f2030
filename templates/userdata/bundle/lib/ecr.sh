# shellcheck shell=bash
# Users log in to ECR through a root helper (gpucluster.bootstrap.ecr_login), which hands them a
# registry password, never the instance role's credentials.

install_ecr_login() {
  local sudoers="${BUNDLE_DIR}/${ROLE_TREE}${ECR_SUDOERS}"
  install_from_bundle "${ROLE_TREE}${ECR_HELPER}" "${ECR_HELPER}" 0755 || true
  [[ -f "${sudoers}" ]] || die "bundle file ${ROLE_TREE}${ECR_SUDOERS} is missing; the bundle is corrupt, redeploy the Cluster stack"
  # sudo refuses to run at all while any file in sudoers.d is malformed.
  visudo -c -q -f "${sudoers}" ||
    die "the bundle's ${ECR_SUDOERS} does not parse (visudo's error is above); it was not installed, and users cannot log in to ECR until a fixed bundle is deployed"
  install_from_bundle "${ROLE_TREE}${ECR_SUDOERS}" "${ECR_SUDOERS}" 0440 || true
}
