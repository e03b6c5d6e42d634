"""What each pattern costs: DynamoDB's billing rules (`capacity`) and
the recorder that applies them to every request a client makes (`recorder`), the bill per upload (`bill`),
keyed's commit designs side by side (`commit_designs`) and the benchmark (`bench`,
`python -m idem bench`). Built on `idem.sim` and `idem.explore`.
"""
