"""The CDK app for a config, synthesized in-process, and the summary `synth` prints."""
