"""The local stand-in for S3 -> async Lambda -> DynamoDB -> SQS, on moto and a virtual clock.

Nothing in here ships to Lambda: it imports moto, which the deployed function never needs.
"""
