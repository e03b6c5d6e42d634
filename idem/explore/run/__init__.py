"""Running the schedules: each batch in one kept world (`runner`, `worlds`), batches shared among
processes (`pool`), each call the handler makes to moto made cheaper while a batch runs
(`fastcalls`), a run given once to every schedule that asks the same (`reuse`), each trigger's
way of handing uploads to the function (`triggers`), and what is uploaded where (`objects`,
`uploads`, `exact_keys`)."""
