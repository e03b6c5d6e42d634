"""Deploying idem's core to a CloudFormation stack: on moto (the default) or on real AWS.

Nothing here ships to Lambda, and nothing heavy is imported at package import time:
`python -m idem` loads idem.deploy.command at start, and `sam build` runs
idem.deploy.package with a bare Python.
"""
