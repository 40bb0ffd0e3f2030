"""The infrastructure renderer: the CloudFormation stacks and the constructs they wire."""
