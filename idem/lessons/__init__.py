"""One chapter's staging or exercise checker each: what a chapter runs that is not production
code, the matrix or a view. Every exercise of chapters 00 to 07 and 10 is checked here (08, 09, 12 and
13 are checked in `idem.views`), and every checker answers an empty exercise with
`answers.not_yet`. Built on everything below (`sim`, `explore`, `cost`).

| chapter | module |
| --- | --- |
| all | `answers` (the unfilled state of an exercise), `facts` (numbers two chapters state, defined once) |
| 00 Start here | `retries.check_charges_guess` (the exercise: how many charges) |
| 01 The naive scribe | `retries` (the exercise: the retry setting that keeps naive to one charge) |
| 02 The atomic claim | `claims`: the lost put, what a claim costs, the race without its barrier, the exercise |
| 03 Choosing a key | `key_stories` (what each key recipe does to real uploads), `recipe_check` (the exercise) |
| 04 Claim-first and the poison | `alarms`: what an alarm on the failure queue sees, the exercise's check |
| 05 The robust scribe | `fix_check`: the exercise's fix, run through the matrix |
| 06 Charge, then die | `leases`: leases, zombies and the owner-fenced commit, the exercise's lease check |
| 07 Time and the auditor | `expiry`, `batches`, `auditor`: record lifetimes, batches, reconciliation |
| 08 Powertools side by side | `powertools_runs`: the table rows of its runs and options |
| 10 Run it in production | `production`: the queue's and concurrency's numbers from the template, the exercise (how long an upload outlives an outage) |
"""
