"""`--object FILE[=KEY]`: the reader's own file is what lands in the bucket, in every schedule.

By default each schedule uploads the check's own order file (docs/one_charge_per_order.md: `{"order_id": ...}` with a
new order per schedule) at `checkNNNNN/order-1.json`. With `--object orders/big.json=incoming/a.json`
each schedule uploads the bytes of orders/big.json instead, at `incoming/a.json` exactly: schedules
are kept apart by running each in an emptied account (`idem.explore.run.exact_keys`). Without a KEY
(`--object orders/big.json`) the name is the file's, with the schedule's number as one folder more
(`check00042/big.json`), so schedules share worlds and never a name. Two rules keep schedules'
orders apart, and are all the check changes in the file:

- a JSON object with an `order_id` gets the schedule's number appended to it (`A-1001` becomes
  `A-1001-00042`; an integer id `1001` becomes `100100042`), so each schedule is its own order. Only
  the id's text changes: every other byte of the file (a field given twice, its spacing) lands as the
  reader wrote it. Any other file lands byte for byte;
- a second upload of the same name is the file again with the same bytes where the check sends
  the uploader's retried PUT, and a second order (`order_id` + `-2`) where it sends another order.
  A file that is not a JSON order has no second order the check could write: those schedules are
  not run, and the report says so (`idem.explore.families.object_schedules`), unless the reader gives the
  second order's file as a second `--object` at the same KEY (`paired`): then it is that file.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from ...core.errors import IdemError
from ..families import key_decoding

#: The check's own names for its uploads (`check{number:05d}/...`): the number is the schedule's.
CHECK_KEY = re.compile(r"^check(\d+)/")
#: S3's limit on a key: 1,024 bytes of UTF-8 (https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-keys.html).
KEY_BYTES = 1024
#: Another account's copy of a schedule's upload (`accounts.other_account_key`: `otherNNNNN/...`,
#: after the trigger's prefix): the same file, the same bytes, under another account's folder.
OTHER_KEY = re.compile(r"(?:^|/)other(\d+)/")


#: On while the check runs an --object with an exact KEY (`install`; idem.explore.run.exact_keys).
EXACT = False
#: The --object the check's uploads are now (`install`), or None.
CURRENT: "UserObject | None" = None


class BadObject(IdemError, ValueError):
    """An --object that cannot be read or named."""


@dataclass(frozen=True)
class UserObject:
    """One --object: where its bytes come from, and the key it lands at (before numbering)."""

    path: str
    key: str
    body: bytes
    exact: bool = False  # KEY was given: every schedule's upload is at KEY itself (exact_keys)
    #: a second --object at the same KEY (`paired`): the bytes of a second order at that name
    second: bytes | None = None
    second_path: str = ""

    @classmethod
    def parse(cls, spec: str) -> "UserObject":
        path, sep, key = spec.partition("=")
        if not path:
            raise BadObject(f"--object {spec!r} is not FILE[=KEY]")
        try:
            body = Path(path).read_bytes()
        except OSError as error:
            raise BadObject(f"--object {path}: cannot read it ({error.strerror or error})") from None
        key = (key if sep else Path(path).name).lstrip("/")
        room = KEY_BYTES - (10 if sep else 20)  # the family names may rename it; a folder per schedule
        if not key or len(key.encode()) > room:
            raise BadObject(f"--object {spec!r}: the key must be 1 to {room} bytes of UTF-8 (S3 allows 1,024; "
                            "the check renames the file for the family names, or adds a folder per schedule)")
        return cls(str(Path(path).resolve()), key, body, exact=bool(sep))

    def key_for(self, number: int, nth: int = 1) -> str:
        """The key of schedule `number`'s upload: KEY itself when it was given (its `nth` upload of
        an SQS batch, the neighbour, at KEY's name with -n: `neighbour_key`); else KEY's
        folder, checkNNNNN/, KEY's file name, a batch's `nth` upload in checkNNNNN-n/: its own name,
        so each message's failure can be told apart."""
        if self.exact:
            return self.key if nth == 1 else neighbour_key(self.key, nth)
        key = PurePosixPath(self.key)
        folder = "" if str(key.parent) == "." else f"{key.parent}/"
        return f"{folder}check{number:05d}{f'-{nth}' if nth > 1 else ''}/{key.name}"

    @property
    def is_order(self) -> bool:
        """Is the file a JSON order (an object with an `order_id`), of which the check can make another?"""
        try:
            data = json.loads(self.body)
        except ValueError:
            return False
        return isinstance(data, dict) and "order_id" in data

    @property
    def makes_second_orders(self) -> bool:
        """Can the check send a second order at the same name: another file given, or a JSON order?"""
        return self.second is not None or self.is_order

    def body_for(self, number: int, second_order: bool = False) -> bytes:
        """The file's bytes for schedule `number` (see the module: only an order_id's text changes); a
        second order's are the second file's, when one was given."""
        if second_order and self.second is not None:
            return _numbered(self.second, f"-{number:05d}")
        return _numbered(self.body, f"-{number:05d}" + ("-2" if second_order else ""))


#: A member `"order_id": VALUE` in a JSON text, its value a string or an integer.
_ORDER_ID = re.compile(rb'("order_id"\s*:\s*)("(?:[^"\\]|\\.)*"|-?\d+)')


def _numbered(body: bytes, suffix: str) -> bytes:
    """`body`, a JSON order's order_id with `suffix` appended to its text (an integer id, the suffix's
    digits), every other byte as it was; any other file as it is."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if not isinstance(data, dict) or not isinstance(data.get("order_id"), (str, int)) or isinstance(
            data.get("order_id"), bool):
        return body
    wanted = data["order_id"]

    def renamed(found: re.Match[bytes]) -> bytes:
        text = found.group(2)
        if json.loads(text) != wanted or type(json.loads(text)) is not type(wanted):
            return found.group(0)  # another member's, or a value the file gives up (a field given twice)
        if isinstance(wanted, int):
            return found.group(1) + text + suffix.replace("-", "").encode()
        return found.group(1) + text[:-1] + json.dumps(suffix)[1:-1].encode() + b'"'

    return _ORDER_ID.sub(renamed, body)


def paired(found: list[UserObject]) -> list[UserObject]:
    """--object's files, a second file at the same KEY made the first's second order (its bytes are
    a second order at that name: `body_for`). Three at one KEY are refused."""
    by_key: dict[tuple[str, bool], UserObject] = {}
    for obj in found:
        first = by_key.get((obj.key, obj.exact))
        if first is None:
            by_key[(obj.key, obj.exact)] = obj
        elif first.second is None:
            by_key[(obj.key, obj.exact)] = replace(first, second=obj.body, second_path=obj.path)
        else:
            raise BadObject(f"--object {obj.path}: a third file at {obj.key!r}; give one file per KEY, or two: "
                            "the upload and a second order at the same name")
    return list(by_key.values())


def install(obj: UserObject) -> None:
    """From now on in this process, the check's uploads are `obj` (LocalWorld.upload)."""
    from ...sim.world import LocalWorld

    real_upload = getattr(LocalWorld.upload, "_real", LocalWorld.upload)
    global EXACT, CURRENT
    EXACT = key_decoding.EXACT_KEY = obj.exact
    CURRENT = obj
    # (world, key this hook uploaded at) -> (the world, schedule number, the body the check first gave)
    made: dict[tuple[int, str], tuple[Any, int, bytes | None]] = {}

    def upload(self: Any, key: str, body: bytes | None = None, **kwargs: Any) -> Any:
        for gone in [k for k, (world, _, _) in made.items() if k[0] == id(self) and world is not self]:
            del made[gone]  # a world closed since, whose id a new one has
        match = CHECK_KEY.match(key)
        mine = obj.key_for(int(match.group(1)), _nth(key)) if match and (id(self), key) not in made else key
        if match and mine != key and key.rsplit("/", 1)[-1] in key_decoding.NAMES:  # the family names
            mine = key_decoding.renamed(mine, key.rsplit("/", 1)[-1])
        if (id(self), mine) in made:  # a second upload of that name: the same bytes again
            _, number, first = made[(id(self), mine)]  # (the uploader's retried PUT) or a second order
            return real_upload(self, mine, obj.body_for(number, second_order=body != first), **kwargs)
        other = OTHER_KEY.search(key)
        if match is None and other is not None and body is not None:  # another account's order: the same file
            return real_upload(self, key, obj.body_for(int(other.group(1))), **kwargs)
        if match is None:  # not one of the check's uploads
            return real_upload(self, key, **kwargs) if body is None else real_upload(self, key, body, **kwargs)
        number = int(match.group(1))
        made[(id(self), mine)] = (self, number, body)
        return real_upload(self, mine, obj.body_for(number), **kwargs)

    upload._real = real_upload  # type: ignore[attr-defined]
    LocalWorld.upload = upload  # type: ignore[method-assign]


def neighbour_key(key: str, nth: int) -> str:
    """The key of an SQS batch's `nth` upload beside KEY: its name with `-nth` before the extension."""
    folder, slash, name = key.rpartition("/")
    stem, dot, extension = name.rpartition(".")
    name = f"{stem}-{nth}.{extension}" if dot and stem else f"{name}-{nth}"
    return f"{folder}{slash}{name}"


def _nth(key: str) -> int:
    """Which upload of an SQS batch a check key is (`triggers.SQS_BATCH`): 1 for any other."""
    from .triggers import SQS_BATCH

    name = key.split("/", 1)[-1]
    return SQS_BATCH.index(name) + 1 if name in SQS_BATCH[1:] else 1
