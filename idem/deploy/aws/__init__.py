"""Deploying to an AWS account: yours, with --yes, or a moto server standing in for it.

`connect` opens the one session every command that can reach AWS uses; `aws_target` is
`python -m idem deploy --target aws`; `emulated` supplies what AWS would do that a moto server
does not, when AWS_ENDPOINT_URL points at one, and says so.
"""
