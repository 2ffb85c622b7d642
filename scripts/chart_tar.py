"""Writing a packaged chart for ``scripts/package_charts.py`` (its module docstring, step 4).

The tar holds regular files only, sorted, all under ``<chart>/``, mode 0644, uid/gid 0, empty user/group names,
mtime 0, in PAX format; gzip level 9 with mtime 0 and no file name. ``Built`` is one packaged chart: the archive and
what ``upstream/charts/README.md`` lists about it.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from dataclasses import dataclass

GZIP_LEVEL = 9


def tar_bytes(name: str, files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel in sorted(files):
            info = tarfile.TarInfo(f"{name}/{rel}")
            info.size = len(files[rel])
            info.mode = 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.type = tarfile.REGTYPE
            tar.addfile(info, io.BytesIO(files[rel]))
    return buf.getvalue()


def gzip_bytes(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=GZIP_LEVEL) as gz:
        gz.write(data)
    return buf.getvalue()


@dataclass(frozen=True)
class Built:
    """One packaged chart: the archive and what ``upstream/charts/README.md`` lists about it."""

    name: str
    version: str
    archive: bytes
    tar_sha256: str
    files: int
