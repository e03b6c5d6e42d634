"""After the charge: what arrived, what the ledger booked and what the provider charged, compared,
and each difference settled by a person. Ships with the core (stdlib and boto3 only).

- `job`: template.yaml's ReconcileFunction (`idem.core.reconcile.job.lambda_handler`), one window
  at a time, with its three sides `uploads` (S3), `lines` (the ledger) and `charges` (Stripe or the
  demo's stand-in), its judgement `compare` and its vocabulary and metrics `report`;
- `audit`: the whole-table reconciliation of the demo stack and chapter 07 (`reconcile(...)`);
- `runbook`: settle one order, refund one charge (`python -m idem settle` / `refund`).
"""
