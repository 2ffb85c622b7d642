"""Every JavaScript library a generated page bundles, with its pinned version and official source (as
``versions.py`` does for charts): the only place they are written down.

Each library's minified distribution and its licence are vendored in ``components/data/web/`` (package data)
and inlined into the page, so the page loads nothing from the network: never fetched at runtime. The file's
sha256 is checked on every read, so a changed or truncated copy fails loudly instead of drawing nothing.

Refresh (a maintainer, online): ``npm pack cytoscape@VERSION``, copy ``package/dist/cytoscape.min.js`` and
``package/LICENSE`` to ``components/data/web/cytoscape-VERSION.{min.js,LICENSE}``, update the record below
(``npm view cytoscape@VERSION dist.integrity``) and re-run the browser test (tests/test_plan_html_browser.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

WEB_DIR = Path(__file__).resolve().parent / "web"


@dataclass(frozen=True)
class Library:
    """A JavaScript library a generated page bundles: its pinned version, npm source, integrity and licence."""

    name: str
    version: str
    source: str  # the npm registry tarball it was taken from
    integrity: str  # the registry's dist.integrity of that tarball
    licence: str  # SPDX id
    file: str  # in WEB_DIR
    licence_file: str
    sha256: str  # of ``file``


CYTOSCAPE = Library(
    name="cytoscape",
    version="3.35.0",
    source="npm registry: cytoscape@3.35.0 (cytoscape-3.35.0.tgz, package/dist/cytoscape.min.js)",
    integrity="sha512-sMvBIXiGMnhkCaWz2R06FwF/27MNlS+Tqvi17foO9UhnUg3XGZccKjxsvEqQFAQYMSSZmN5SxYzUYlQ0DOJJ3g==",
    licence="MIT",
    file="cytoscape-3.35.0.min.js",
    licence_file="cytoscape-3.35.0.LICENSE",
    sha256="71fa9ebec21a7ca2c40cff6aacc30d1f6464e363662ad4b2c197e1adc770cd94",
)
LIBRARIES = {CYTOSCAPE.name: CYTOSCAPE}


@cache
def script(name: str) -> str:
    """The library's minified code, checked against its recorded sha256."""
    lib = LIBRARIES[name]
    data = (WEB_DIR / lib.file).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != lib.sha256:
        raise RuntimeError(
            f"{WEB_DIR / lib.file}: sha256 {digest}, expected {lib.sha256} (components/data/web_libs.py)"
        )
    return data.decode("utf-8")


def licence(name: str) -> str:
    return (WEB_DIR / LIBRARIES[name].licence_file).read_text(encoding="utf-8")
