"""Chapters 08 to 12, on the way to production: Powertools' runs, a tour of the deployed stack,
the production profile's numbers, and predicting what the check finds in a handler.

`powertools_runs` (08), `stack_tour` and `stack_order` (09), `production` (10 and 12),
`check_prediction` (11).
"""
