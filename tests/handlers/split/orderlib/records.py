"""What the parser hands the entry point: one upload's S3 record."""
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Upload:
    record: dict[str, Any]
