"""A PyTorch smoke before and after an install, so that "the graft made it slower" is one command
(``rocmrevive install --smoke``).

The smoke runs through the same door as ``rocmrevive smoke --torch`` (``run_smoke``: the
interpreter found by reading files, run as its owner, never a user-writable one as root), once
right before the first change is applied (after the plan, after the user's yes) and once after
the install. Both runs are ordinary smokes: each is recorded as ``smoke`` records it (a pass on
the old stack becomes that stack's record). The install then compares the two runs directly,
product by product (``expect.against_record``: the geometric mean per shape class, then over the
classes), for information:

    after the install: 1.31x the time of the pass before it (2026-12-07 06:40 UTC; slowest shape class: decode 3.02x)

    around = Around(root, python=None)   # RevError now (before any change) when no interpreter may run
    around.before()                      # once, right before the first change
    around.after()                       # after an install that changed something
    around.to_json(); around.line()
"""
from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Callable

from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from rocmrevive.smoke import expect as expect_mod
from rocmrevive.smoke import torch_runner
from rocmrevive.smoke.run import run_smoke

Log = Callable[[str], None]


@dataclass
class Around:
    root: Root
    python: str | None = None           # --smoke-python; None: the first found with torch
    cpu_test_mode: bool = False
    cpu_devices: int = 1
    timeout: float = 180.0
    log: Log = lambda s: None
    chosen: str | None = None           # the interpreter decided up front
    chosen_because: str = ""
    runs: dict[str, dict] = field(default_factory=dict)   # "before" / "after" -> run_smoke's doc

    def decide(self) -> None:
        """Pick the interpreter and who runs it now, before anything is fetched or changed: no
        PyTorch found is a USAGE error, an interpreter root may not run is PERMISSION (RevError)."""
        py, why = torch_runner.pick_python(self.python, self.root)
        if py is None:
            raise RevError("USAGE", f"--smoke: {why}; pass --smoke-python PATH (or leave --smoke out)")
        torch_runner.runner_of(py)   # RevError("PERMISSION") when neither root nor one owner may run it
        self.chosen, self.chosen_because = py, why

    def _run(self, when: str) -> dict:
        if self.chosen is None:
            self.decide()
        self.log(f"smoke {when} the install: the PyTorch probe with {self.chosen} ({self.chosen_because})")
        doc = run_smoke(self.root, torch=True, llama=False, explicit={"torch"}, python=self.chosen,
                        cpu_test_mode=self.cpu_test_mode, cpu_devices=self.cpu_devices, timeout=self.timeout)
        self.runs[when] = doc
        self.log(f"smoke {when} the install: {_verdict(doc)}")
        return doc

    def before(self) -> None:
        """The smoke on the old stack; only once (several trees may be changed in one install)."""
        if "before" not in self.runs:
            self._run("before")

    def after(self) -> None:
        self._run("after")

    # --- the comparison --------------------------------------------------------------------
    def comparison(self) -> dict | None:
        """Per device present in both runs: the after run's time against the before run's, per
        shape class and overall (None unless both runs passed their checks)."""
        b, a = self.runs.get("before"), self.runs.get("after")
        if not b or not a or not _passed(b) or not _passed(a):
            return None
        host = socket.gethostname()
        devices = []
        for dev_a in _torch(a).get("devices") or []:
            key = expect_mod.device_key(dev_a, a["mode"], host)
            dev_b = next((d for d in _torch(b).get("devices") or []
                          if expect_mod.device_key(d, b["mode"], host) == key), None)
            if dev_b is None:
                continue
            now = expect_mod.products_of(_torch(a).get("records") or [], dev_a["index"])
            then = {p: v["seconds"] for p, v in
                    expect_mod.products_of(_torch(b).get("records") or [], dev_b["index"]).items()}
            classes = expect_mod.against_record(now, then)
            if not classes:
                continue
            slowest = max(classes.items(), key=lambda kv: kv[1]["ratio"])
            devices.append({"device": dev_a["index"], "name": dev_a.get("name"), "key": key,
                            "overall": expect_mod.overall(classes),
                            "classes": classes, "slowest": {"class": slowest[0], "ratio": slowest[1]["ratio"]}})
        return {"before_at": b.get("finished_at"), "devices": devices} if devices else None

    def line(self) -> str | None:
        """The one line an install prints about speed and results before against after."""
        b, a = self.runs.get("before"), self.runs.get("after")
        if a is None:
            return None if b is None else "nothing was changed: no smoke after the install"
        if b is None:
            return f"after the install: {_verdict(a)} (no smoke ran before it: the change was made by a run as the tree's owner)"
        if not _passed(a):
            return f"after the install: the smoke {_verdict(a)} (before it: {_verdict(b)})"
        if not _passed(b):
            return f"after the install: the smoke {_verdict(a)}; before it, it {_verdict(b)}"
        cmp = self.comparison()
        if cmp is None:
            return "after the install: no product was timed in both runs"
        when = _when(cmp["before_at"])
        devs = cmp["devices"]
        if len(devs) == 1:
            figure = f"{devs[0]['overall']:.2f}x"
        else:
            figure = ", ".join(f"device {d['device']} {d['overall']:.2f}x" for d in devs)
        worst = max(devs, key=lambda d: d["slowest"]["ratio"])
        slowest = f"{worst['slowest']['class']} {worst['slowest']['ratio']:.2f}x"
        if len(devs) > 1:
            slowest = f"device {worst['device']}'s {slowest}"
        return f"after the install: {figure} the time of the pass before it ({when}; slowest shape class: {slowest})"

    def to_json(self) -> dict:
        return {"python": self.chosen, "python_chosen_because": self.chosen_because,
                "cpu_test_mode": self.cpu_test_mode,
                "before": _brief(self.runs.get("before")), "after": _brief(self.runs.get("after")),
                "comparison": self.comparison(), "line": self.line()}


def _torch(doc: dict) -> dict:
    return (doc.get("parts") or {}).get("torch") or {}


def _passed(doc: dict) -> bool:
    """The results were right (a slow verdict against an older record still compares)."""
    return doc.get("code") in ("OK", "SMOKE_SLOW")


def _verdict(doc: dict) -> str:
    code = doc.get("code")
    if code == "OK":
        return "passed"
    if code == "SMOKE_SLOW":
        return f"passed its checks, SLOW: {doc.get('message')}"
    if code == "NOTHING_SUPPORTED":
        return f"could not run: {doc.get('message')}"
    return f"FAILED: {doc.get('message')}"


def _when(iso: str | None) -> str:
    s = str(iso or "?")
    return f"{s[:10]} {s[11:16]} UTC" if len(s) >= 16 and s.endswith("+00:00") else s


def _brief(doc: dict | None) -> dict | None:
    """What the install's JSON carries of one smoke run."""
    if doc is None:
        return None
    t = _torch(doc)
    return {"code": doc.get("code"), "message": doc.get("message"), "started_at": doc.get("started_at"),
            "finished_at": doc.get("finished_at"), "mode": doc.get("mode"), "seconds": doc.get("seconds"),
            "record": doc.get("record"), "speed_records": doc.get("speed_records"),
            "torch": {k: t.get(k) for k in ("status", "reason", "python", "torch", "platform", "hip", "cuda")},
            "devices": [{k: d.get(k) for k in ("index", "name", "arch", "model")} for d in t.get("devices") or []],
            "speed": [{k: j.get(k) for k in ("device", "name", "stack", "summary")}
                      | {"slow": [p["message"] for p in j.get("slow") or []]} for j in doc.get("speed") or []],
            "health": {k: (doc.get("health") or {}).get(k) for k in ("failures", "warnings")}}
