"""One chapter's staging or exercise checker each: what a chapter runs that is not production
code, the matrix or a view. Built on everything below (`sim`, `explore`, `cost`).

| chapter | module |
| --- | --- |
| 02 The atomic claim | `claims`: the lost put and what a claim costs |
| 03 Choosing a key | `key_stories` (what each key recipe does to real uploads), `recipe_check` (the exercise) |
| 04 Claim-first and the poison | `alarms`: what an alarm on the failure queue sees |
| 05 The robust scribe | `fix_check`: the exercise's fix, run through the matrix |
| 06 Charge, then die | `leases`: leases, zombies and the owner-fenced commit |
| 07 Time and the auditor | `expiry`, `batches`, `auditor`: record lifetimes, batches, reconciliation |
"""
