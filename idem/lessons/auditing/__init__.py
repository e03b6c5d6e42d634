"""Chapter 07, time and the auditor: how long records live, a messy batch and what it leaves, and
the reconciliation query the reader writes, checked against `idem.core.reconcile`.

`expiry` (records that expire), `batches` (footprints of a batch), `auditor` (the exercise).
"""
