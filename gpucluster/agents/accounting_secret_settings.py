"""What the EKS stack hands accounting_secret: the custom resource's property names, the
Kubernetes group its access entry maps the function to, and its handler.

Standard library only, like topology_writer_settings: the synth reads these, and importing
accounting_secret itself would load the AWS SDK into every synth.
"""

from __future__ import annotations

# The custom resource's properties: the Secrets Manager secret (its ARN) and the JSON field of
# its SecretString that holds the password, and the Kubernetes Secret written from it. None is
# the password itself: CloudFormation cannot resolve a secret into a custom resource's properties.
SECRET_ARN_PROPERTY = "SecretArn"
SECRET_FIELD_PROPERTY = "SecretField"
NAMESPACE_PROPERTY = "Namespace"
NAME_PROPERTY = "Name"
KEY_PROPERTY = "Key"
RESOURCE_TYPE = "Custom::GpuclusterKubernetesSecret"
# The Kubernetes group of the function's IAM role (its EKS access entry); the Role bound to it
# may create Secrets in the namespace and update only the one it writes
# (gpucluster.eks.accounting_password.writer_rbac).
KUBERNETES_GROUP = "gpucluster:accounting-password-writer"
# The function's package is what the handler's module imports, followed (gpucluster.agent_package).
HANDLER = "gpucluster.agents.accounting_secret.handler"
