"""What ships inside the Lambda: the standard library and boto3, nothing else.

This folder is the deployment package (with `idem/__init__.py`). Everything beside it in
`idem/` (the local AWS, views, deploy tool and command line) stays on your machine.
"""
