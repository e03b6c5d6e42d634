"""Where the function runs and what it may touch: `idem check` in a child process the handler cannot
end, hang or silence (`parent`, the CLI's side; `child`, `guard` and `clean_run`, the child's; run as
`python -m idem.explore.sandbox`), each execution environment's own /tmp (`lambda_tmp`), the calls
moto does not implement (`stand_ins`), Stripe's SDK aimed at the loopback Stripe (`stripe_sdk`) and
S3's limit on a key (`s3_limits`)."""
