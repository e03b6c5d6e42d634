"""The loopback Stripe: the part of Stripe's API v1 the workbook uses, served on 127.0.0.1 in
Stripe's wire format, with its rules cited and its shapes checked against what Stripe publishes.

`server` serves it (and `loopback_stripe` aims a world's provider at it); `account` is one account's
rules without HTTP, built from `idempotency` (keys), `customers` (customers and PaymentMethods),
`payment_intents` (PaymentIntents and refunds), `lists` (lists and search), `params` (routes and
parameters), `access` (keys' modes, permissions, rate limits), `errors` (error answers and the
faults a test scripts) and `objects` (the objects as served); `shapes` checks them against Stripe's
OpenAPI fields (`openapi_fields.json`); `keys` is what Stripe does to keys over time.
"""
