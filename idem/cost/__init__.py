"""What each pattern costs: DynamoDB's billing rules (`capacity`), the bill per upload (`bill`),
keyed's commit designs side by side (`commit_designs`) and the benchmark (`bench`,
`python -m idem bench`). Built on `idem.sim` and `idem.explore`.
"""
