"""Deploying to moto in this process: the whole deploy on the local AWS, no account, no network.

`moto_target` is `python -m idem deploy --target moto` (package, upload, expand, create, fill what
moto drops, one upload, teardown); `lab` is chapter 09's explorer over it.
"""
