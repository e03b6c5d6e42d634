"""The local AWS: S3, asynchronous Lambda, DynamoDB and SQS on moto and a virtual clock.

`world` builds the resources (and fills moto's gaps: AWS-shaped S3 events, TTL on read), `atomic`
makes moto's conditional writes atomic under threads, `fastload` makes a check's many cold starts
cheaper without changing them. `runtime/` is Lambda's asynchronous side (retries, containers,
maximum event age, the failure queue); `triggers` feeds it from SQS and EventBridge instead.
`boundary` watches every call a handler makes and injects faults there, as `faults` plans them;
`sessions` makes the handler's own boto3 sessions and threads cross the same boundaries;
`sdk_retries` is botocore's own resending at them, and `writes` where each write lands. `stripe/`
is a loopback Stripe: Stripe's API v1 rules (each cited) over the stand-in's money, its shapes
checked against what Stripe publishes. `powertools_entry` and `powertools_handler` are functions it
runs besides the core's entry point: Powertools behind the workbook's switches, and Powertools'
decorator as a reader writes it (the others are in `runtime/`).

Nothing here ships to Lambda: it imports moto, which the deployed function never needs. It
imports only `idem.core` (and `idem.console`); everything that explores, measures or teaches
builds on it.
"""
