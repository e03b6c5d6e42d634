"""Deploying idem's core to a CloudFormation stack: on moto (the default) or on real AWS.

Nothing here ships to Lambda, and nothing heavy is imported at package import time:
`python -m idem deploy` (idem/cli/deploy.py) imports these modules only when it runs, and
`sam build` runs idem.deploy.package with a bare Python.
"""
