"""One chapter's staging or exercise checker each: what a chapter runs that is not production
code, the matrix or a view. Every exercise of chapters 01 to 07 is checked here. Built on
everything below (`sim`, `explore`, `cost`).

| chapter | module |
| --- | --- |
| 01 The naive scribe | `retries` (the exercise: the retry setting that keeps naive to one charge) |
| 02 The atomic claim | `claims`: the lost put, what a claim costs, the race without its barrier, the exercise |
| 03 Choosing a key | `key_stories` (what each key recipe does to real uploads), `recipe_check` (the exercise) |
| 04 Claim-first and the poison | `alarms`: what an alarm on the failure queue sees |
| 05 The robust scribe | `fix_check`: the exercise's fix, run through the matrix |
| 06 Charge, then die | `leases`: leases, zombies and the owner-fenced commit, the exercise's lease check |
| 07 Time and the auditor | `expiry`, `batches`, `auditor`: record lifetimes, batches, reconciliation |
"""
