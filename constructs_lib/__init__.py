"""Reusable CDK constructs, one idea each, configured through typed props."""
