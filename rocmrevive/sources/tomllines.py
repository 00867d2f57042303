"""Line numbers for TOML key paths, which tomllib does not report: what makes a manifest error
point at ``manifests/x.toml:12``.

    TomlLines(text).line(("sources", 1, "sha256"))   # 31: the line of the second [[sources]]'s sha256
"""
from __future__ import annotations

import re


class TomlLines:
    """Maps key paths such as ("sources", 1, "sha256") or ("components", 0, "files", 3) to the
    line that defines them, by a light scan of the text (headers, keys, string array items)."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
    _KEY = re.compile(r"""^\s*((?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+)(?:\s*\.\s*(?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+))*)\s*=""")
    _STR = re.compile(r""""(?:[^"\\]|\\.)*"|'[^']*'""")

    def __init__(self, text: str):
        self.map: dict[tuple, int] = {}
        counts: dict[tuple, int] = {}
        cur: tuple = ()
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            ln = lines[i]
            no = i + 1
            i += 1
            stripped = ln.strip()
            if not stripped or stripped.startswith("#"):
                continue
            h = self._HEADER.match(ln)
            if h and not self._KEY.match(ln):
                keys = tuple(self._split(h.group(2)))
                if h.group(1) == "[[":
                    n = counts.get(keys, -1) + 1
                    counts[keys] = n
                    cur = keys + (n,)
                else:
                    cur = keys
                self.map.setdefault(cur, no)
                continue
            k = self._KEY.match(ln)
            if not k:
                continue
            path = cur + tuple(self._split(k.group(1)))
            self.map.setdefault(path, no)
            rest = ln[k.end():]
            if rest.lstrip().startswith('"""') or rest.lstrip().startswith("'''"):
                q = rest.lstrip()[:3]
                if rest.count(q) < 2:
                    while i < len(lines) and q not in lines[i]:
                        i += 1
                    i += 1
                continue
            if rest.lstrip().startswith("["):
                depth, item, seg, seg_no = 0, 0, rest, no
                while True:
                    cut = self._comment_at(seg)
                    for m in self._STR.finditer(seg[:cut]):
                        self.map.setdefault(path + (item,), seg_no)
                        item += 1
                    code = self._STR.sub('""', seg[:cut])
                    depth += code.count("[") - code.count("]")
                    if depth <= 0 or i >= len(lines):
                        break
                    seg, seg_no = lines[i], i + 1
                    i += 1

    @classmethod
    def _comment_at(cls, seg: str) -> int:
        pos = 0
        for m in cls._STR.finditer(seg):
            hash_at = seg.find("#", pos, m.start())
            if hash_at >= 0:
                return hash_at
            pos = m.end()
        hash_at = seg.find("#", pos)
        return hash_at if hash_at >= 0 else len(seg)

    @staticmethod
    def _split(dotted: str) -> list[str]:
        out = []
        for part in re.findall(r'"[^"]*"|\'[^\']*\'|[^.\s]+', dotted):
            out.append(part[1:-1] if part[:1] in "\"'" else part)
        return out

    def line(self, path: tuple) -> int:
        p = tuple(path)
        while p:
            if p in self.map:
                return self.map[p]
            p = p[:-1]
        return 1
