"""When a submission came in, as far as its source tells (:class:`Submitted`): the
``timestamp.txt`` that nbgrader writes beside a submission (:func:`read_timestamp`, read in
the door's child, :mod:`labtools.door.parse`), a platform's late mark without a time (Canvas's
``_LATE``) or its own time (a Moodle worksheet's "Last modified"). Every time is aware and
in UTC, within the years :data:`YEARS` (:func:`checked`). What the course's late policy
makes of them is :mod:`labtools.course.late`'s.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import stat
import zoneinfo
from dataclasses import dataclass
from pathlib import Path

TIMESTAMP = "timestamp.txt"  # nbgrader's, beside a submission
NBGRADER_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"  # nbgrader's timestamp_format default
YEARS = (1970, 2100)  # a time outside these years (in UTC) is no submission's or due date's


@dataclass
class Submitted:
    """When one submission came in, as far as its source tells."""

    time: dt.datetime | None = None  # with a time zone
    late: bool = False  # a platform marked it late (without a time: Canvas's _LATE)
    source: str = ""  # "timestamp.txt", "Canvas _LATE", "Moodle worksheet", ...
    problem: str = ""  # why the source's time could not be read
    digest: str = ""  # the graded notebook's (a time for another notebook is not used)

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data["time"] = self.time.isoformat() if self.time else None
        return data

    @classmethod
    def from_json(cls, data: dict) -> Submitted:
        """A time as :meth:`to_json` wrote it (by this version or an earlier one, which
        may have kept any time: one outside :data:`YEARS` becomes a problem, not a time)."""
        data = dict(data)
        names = {f.name for f in dataclasses.fields(cls)}
        found = cls(**{k: v for k, v in data.items() if k in names and k != "time"})
        if data.get("time"):
            try:
                found.time = checked(dt.datetime.fromisoformat(data["time"]), "")
            except (TypeError, ValueError) as err:
                found.problem = f"{found.source or 'its source'} gave a time that cannot be: {err}"
        return found


def checked(when: dt.datetime, what: str) -> dt.datetime:
    """``when`` in UTC, or a ValueError naming ``what`` for a time without a zone or one
    outside the years :data:`YEARS` once its offset is applied."""
    what = f"{what} " if what else ""
    if not isinstance(when, dt.datetime) or when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"{what}{when!s} has no time zone")
    try:
        utc = when.astimezone(dt.UTC)
    except OverflowError:
        utc = None
    if utc is None or not YEARS[0] <= utc.year <= YEARS[1]:
        raise ValueError(f"{what}{when.isoformat()} is outside the years {YEARS[0]}-{YEARS[1]}")
    return utc


def parse_timestamp(text: str) -> dt.datetime:
    """A time as nbgrader writes it beside a submission: ``%Y-%m-%d %H:%M:%S.%f %Z`` (a
    zone's name, ``UTC`` by default, or an offset ``+0100``), or ISO 8601 (``zip_collect``
    writes ``isoformat(" ")``); without a zone it is UTC, as nbgrader's ``parse_utc``
    takes it. A ValueError for anything else, and for a zone name the time zone database
    does not know (``CEST``: nbgrader would silently take it as UTC), and for a time
    outside the years :data:`YEARS` (:func:`checked`). The time is returned in UTC."""
    return checked(_timestamp(text.strip()), "")


def _timestamp(text: str) -> dt.datetime:
    parts = text.split(" ")
    if len(parts) == 3:
        stamp, zone = " ".join(parts[:2]), parts[2]
        try:
            when = dt.datetime.fromisoformat(stamp)
        except ValueError:
            raise ValueError(f"{text!r} is not nbgrader's {NBGRADER_FORMAT}") from None
        if when.tzinfo is not None:
            raise ValueError(f"{text!r} has two time zones")
        if re.fullmatch(r"[+-]\d{2}:?\d{2}", zone):
            sign = 1 if zone[0] == "+" else -1
            hours, minutes = int(zone[1:3]), int(zone[-2:])
            offset = dt.timedelta(hours=hours, minutes=minutes) * sign
            return when.replace(tzinfo=dt.timezone(offset))
        try:
            return when.replace(tzinfo=zoneinfo.ZoneInfo(zone))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{text!r}: no time zone is named {zone!r}") from None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not nbgrader's {NBGRADER_FORMAT}") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def read_timestamp(path: Path) -> Submitted:
    """The time in nbgrader's ``timestamp.txt`` at ``path`` (a link is not followed, and
    only its first 200 bytes are read); a problem in :attr:`Submitted.problem` when it
    cannot be read."""
    source = TIMESTAMP
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return Submitted(source=source, problem=f"{TIMESTAMP} is not a file")
            data = f.read(200)
        return Submitted(parse_timestamp(data.decode("utf-8")), source=source)
    except OSError as err:
        return Submitted(source=source, problem=f"{TIMESTAMP} cannot be read ({err.strerror})")
    except UnicodeDecodeError:
        return Submitted(source=source, problem=f"{TIMESTAMP} is not text")
    except ValueError as err:
        return Submitted(source=source, problem=f"{TIMESTAMP} is not a time: {err}")
