"""The local AWS: S3, asynchronous Lambda, DynamoDB and SQS on moto and a virtual clock.

`world` builds the resources (and fills moto's gaps: AWS-shaped S3 events, TTL on read), `runtime`
is Lambda's asynchronous side (retries, containers, maximum event age, the failure queue),
`boundary` watches every call a handler makes and injects faults there, `atomic` makes moto's
conditional writes atomic under threads, and `stripe/` is a loopback Stripe: Stripe's API v1
rules (each cited) over the stand-in's money, its shapes checked against what Stripe publishes. The `*_entry` and `powertools_handler` modules are the functions it runs
besides the core's entry point: Powertools' decorator as a reader writes it, Powertools behind
the workbook's switches, and a no-op for the benchmark.

Nothing here ships to Lambda: it imports moto, which the deployed function never needs. It
imports only `idem.core` (and `idem.console`); everything that explores, measures or teaches
builds on it.
"""
