"""`gpucluster users access`: the commands that give each person of `users:` their own way
into the login nodes through Session Manager, as the Cluster stack deployed it
(gpucluster.constructs_lib.user_sessions): the IAM lines an administrator runs once per
person, and the lines that person connects with.
"""
