"""Rewrite sdists so the same commit always gives the same bytes (setuptools stamps build times into them).

Usage: SOURCE_DATE_EPOCH=<commit time> python reproducible_sdist.py dist/*.tar.gz
Members are sorted by name, owned by 0/0 with no user names, modes reduced to 0644/0755, every mtime set to
SOURCE_DATE_EPOCH, and the gzip header carries that time and no file name. The content is unchanged.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import tarfile


def normalise(path: str, epoch: int) -> None:
    with tarfile.open(path, "r:gz") as src:
        members = sorted(src.getmembers(), key=lambda m: m.name)
        payload = {m.name: src.extractfile(m).read() for m in members if m.isfile()}  # type: ignore[union-attr]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as dst:
        for m in members:
            m.mtime, m.uid, m.gid, m.uname, m.gname = epoch, 0, 0, "", ""
            m.mode = 0o755 if m.isdir() or m.mode & 0o111 else 0o644
            m.pax_headers = {}
            dst.addfile(m, io.BytesIO(payload[m.name]) if m.isfile() else None)
    with open(path, "wb") as out, gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=epoch) as gz:
        gz.write(raw.getvalue())


def main(argv: list[str]) -> int:
    epoch = int(os.environ["SOURCE_DATE_EPOCH"])
    for path in argv:
        normalise(path, epoch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
