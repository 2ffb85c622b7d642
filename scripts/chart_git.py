"""The upstream git repositories, read for ``scripts/package_charts.py --git-root`` (its module docstring, step 1).

``GitRepo`` reads a chart folder's files at a pinned commit through the ``git`` command, every symlink replaced by
what it points at in the same commit; ``find_git_dir`` finds a repository's git directory (the layouts
``--git-root`` accepts, or ``--git-repo``).
"""

from __future__ import annotations

import posixpath
import subprocess
from pathlib import Path


class GitRepo:
    def __init__(self, git_dir: Path):
        self.git_dir = git_dir

    def _git(self, *args: str, data: bytes | None = None) -> bytes:
        result = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", *args], input=data, capture_output=True, check=False
        )
        if result.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} in {self.git_dir}: {result.stderr.decode().strip()}")
        return result.stdout

    def has_commit(self, commit: str) -> bool:
        result = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", "cat-file", "-e", f"{commit}^{{commit}}"],
            capture_output=True,
            check=False,
        )
        return result.returncode == 0

    def tag_commit(self, tag: str) -> str | None:
        result = subprocess.run(
            ["git", f"--git-dir={self.git_dir}", "rev-parse", "--verify", "-q", f"refs/tags/{tag}^{{commit}}"],
            capture_output=True,
            check=False,
        )
        return result.stdout.decode().strip() or None

    def entries(self, commit: str, path: str) -> list[tuple[str, str, str]]:
        """(mode, sha, path) of every blob under ``path`` (or the one at it)."""
        out = self._git("ls-tree", "-r", "-z", "--full-tree", commit, "--", path)
        rows = []
        for item in out.split(b"\0"):
            if not item:
                continue
            meta, name = item.decode().split("\t", 1)
            mode, kind, sha = meta.split()
            if kind != "blob":
                raise ValueError(f"{name}: {kind} entries (submodules) are not supported")
            if name == path or name.startswith(path.rstrip("/") + "/"):
                rows.append((mode, sha, name))
        return rows

    def blob(self, sha: str) -> bytes:
        return self._git("cat-file", "blob", sha)

    def tree_files(self, commit: str, path: str, depth: int = 0) -> dict[str, bytes]:
        """Files under ``path`` at ``commit``, relative to it, with symlinks resolved inside the commit."""
        if depth > 20:
            raise ValueError(f"symlink chain too deep at {path}")
        files: dict[str, bytes] = {}
        for mode, sha, name in self.entries(commit, path):
            rel = name[len(path) :].lstrip("/")
            if mode == "120000":
                target = posixpath.normpath(posixpath.join(posixpath.dirname(name), self.blob(sha).decode()))
                if target.startswith("../") or target == "..":
                    raise ValueError(f"{name} points outside the repository")
                resolved = self.tree_files(commit, target, depth + 1)
                if not resolved:
                    raise ValueError(f"{name} -> {target}: nothing there at {commit}")
                for sub, data in resolved.items():
                    files[posixpath.join(rel, sub) if sub else rel] = data
            else:
                files[rel] = self.blob(sha)
        return files


def find_git_dir(root: Path | None, repo: str, explicit: dict[str, Path]) -> Path:
    if repo in explicit:
        return explicit[repo]
    owner, name = repo.split("/")
    if root is not None:
        for candidate in (root / f"{owner}+{name}" / "repo", root / f"{owner}+{name}", root / owner / name):
            if candidate.is_dir():
                return candidate / ".git" if (candidate / ".git").is_dir() else candidate
    raise SystemExit(f"package-charts: no git directory for {repo} (use --git-root or --git-repo {repo}=PATH)")
