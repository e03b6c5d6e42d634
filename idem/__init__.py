"""The Ledger That Charged Twice: idempotent S3-triggered Lambda handlers."""
