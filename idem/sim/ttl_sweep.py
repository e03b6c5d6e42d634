"""DynamoDB's Time to Live, as the background deletion AWS documents: once an item's TTL attribute (a
Number, epoch seconds) is before now, the item is expired and "subsequently deleted" on a best-effort
basis, "typically within two days of expiration"; until then it still shows in reads
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_UpdateTimeToLive.html). moto keeps
the setting and deletes nothing. `sweep_expired(now)` is the deletion having happened: every item of
every table with TTL enabled whose TTL attribute is before `now` is removed from moto's backend (the
platform's side, not the function's: no request, no boundary). The check calls it where its schedules
move the clock on by hours or days (idem.explore.families.timed), so a handler that counts on an
expired item still being there, or forgets that its dedup record has a TTL, meets the deletion."""
from __future__ import annotations

from .world import ACCOUNT, REGION


def sweep_expired(now: float) -> int:
    """Delete every expired item (TTL enabled on its table, its TTL attribute a Number before `now`);
    returns how many."""
    from moto.dynamodb.models import dynamodb_backends

    from .atomic import _LOCK  # the lock every write to the backend takes

    gone = 0
    with _LOCK:
        for table in list(dynamodb_backends[ACCOUNT][REGION].tables.values()):
            ttl = getattr(table, "ttl", {}) or {}
            attribute = ttl.get("AttributeName")
            if ttl.get("TimeToLiveStatus") != "ENABLED" or not attribute:
                continue
            stored = [item for kept in list(table.items.values())
                      for item in (list(kept.values()) if table.range_key_attr else (kept,))]
            for item in stored:
                value = item.attrs.get(attribute)
                if value is None or value.type != "N":
                    continue
                try:
                    expired = float(value.value) < now
                except ValueError:
                    continue
                if expired:
                    table.delete_item(item.hash_key, item.range_key)
                    gone += 1
    return gone
