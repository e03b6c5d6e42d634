"""What AWS checks or sets that moto does not, held against the expanded template.

`create_rules`: the checks AWS makes when it creates the stack; `gaps`: the settings moto's
CloudFormation drops, found and filled; `enforced`: a function's calls under its own role, with
IAM enforced; `calls`: which AWS calls the function really makes, as IAM actions.
"""
