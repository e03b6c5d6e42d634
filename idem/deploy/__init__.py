"""Deploying idem's core to a CloudFormation stack: on moto (the default) or on real AWS.

Nothing here ships to Lambda, and nothing heavy is imported at package import time:
`python -m idem deploy` (idem/cli/deploy.py) imports these modules only when it runs, and
`sam build` runs idem.deploy.package with a bare Python.

Here, what every target shares: the template and its reading (`template`, `prices`,
`throughput`), what ships (`package`, `artifact`), one CloudFormation stack handled carefully
(`stack`, `names`, `errors`, `sam`) and the demo's settings and report (`flow`). By what it deploys
to: `local/` (moto in this process), `aws/` (your AWS account, or a moto server standing in);
`aws_rules/` holds what AWS checks or sets that moto does not.
"""
