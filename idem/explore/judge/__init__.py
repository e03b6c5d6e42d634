"""Judging what a schedule did: where its effects landed (`effects`), the books (`books`), writes by
the state they leave (`state`), the verdicts and the rules that give them (`verdicts`), and one
schedule's result (`result`)."""
