"""One chapter's staging or exercise checker each: what a chapter runs that is not production
code, the matrix or a view. Every exercise of chapters 00 to 07 and 10 is checked here (08, 09, 12 and
13 are checked in `idem.views`), and every checker answers an empty exercise with
`answers.not_yet`. Built on everything below (`sim`, `explore`, `cost`).

By part of the book: `scribes/` (chapters 00 to 06, the patterns and the key), `auditing/`
(chapter 07, time and the auditor), `shipping/` (chapters 08 to 12, from Powertools to production);
beside them what every chapter shares.

| chapter | module |
| --- | --- |
| all | `answers` (the unfilled state of an exercise), `facts` (numbers two chapters state, defined once) |
| 00 Start here | `scribes.retries.check_charges_guess` (the exercise: how many charges) |
| 01 The naive scribe | `scribes.retries` (the exercise: the retry setting that keeps naive to one charge) |
| 02 The atomic claim | `scribes.claims`: the lost put, what a claim costs, the race without its barrier, the exercise |
| 03 Choosing a key | `scribes.key_stories` (what each key recipe does to real uploads), `scribes.recipe_check` (the exercise), `scribes.orders` (which order an upload is), `scribes.money` (who pays, how much) |
| 04 Claim-first and the poison | `scribes.alarms`: what an alarm on the failure queue sees, the exercise's check |
| 05 The robust scribe | `scribes.fix_check`: the exercise's fix, run through the matrix |
| 06 Charge, then die | `scribes.leases`: leases, zombies and the owner-fenced commit, the exercise's lease check; `scribes.protocol` (the keyed protocol on one screen); `scribes.money` (how long a key protects an order) |
| 07 Time and the auditor | `auditing.expiry`, `auditing.batches`, `auditing.auditor`: record lifetimes, batches, reconciliation |
| 08 Powertools side by side | `shipping.powertools_runs`: the table rows of its runs and options |
| 09 Deploy to AWS | `shipping.stack_tour`: what AWS makes when the stack deploys, a few resources at a time |
| 10 Run it in production | `shipping.production`: the queue's and concurrency's numbers from the template, the exercise (how long an upload outlives an outage) |
| 11 Check your own handler | `shipping.check_prediction`: the exercise (predict what the check finds, then run it) |
| 12 What to ship | `shipping.production`, `scribes.money` |
"""
