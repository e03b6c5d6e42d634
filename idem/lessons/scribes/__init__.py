"""Chapters 00 to 06, the scribes: naive, claim-first, robust and keyed, one failure at a time,
and the key that names one order. What each chapter stages, and its exercise's checker.

`retries` (00, 01), `claims` (02), `key_stories`, `recipe_check`, `orders` and `money` (03; `money`
also 06 and 12), `alarms` (04), `fix_check` (05), `leases` and `protocol` (06).
"""
