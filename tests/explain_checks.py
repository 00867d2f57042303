"""What every explain pass's tests check the same way (tests/test_explain_{apps,core,libs,system,tenth,review}.py):
a line answered by its entry alone, a multi-cause answer's causes each with its check, and the CLI from the outside
(its JSON document and exit code)."""
from __future__ import annotations

import json

from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.diagnose.catalogue import by_id
from rocmrevive.diagnose.diagnosis import Diagnosis
from rocmrevive.diagnose.explain import explain_text


def answered_alone(text: str, rule: str) -> Diagnosis:
    """``text`` gives exactly one diagnosis, ``rule``'s, in its entry's words, with an outside action and why
    rocmrevive does not fix it (none of the later passes' entries is rocmrevive's to fix)."""
    found = explain_text(text)
    assert [d.rule for d in found] == [rule], (text, [d.rule for d in found])
    d = found[0]
    assert d.library == by_id()[rule].component
    assert d.fix and d.why_not and not d.fixable_by_rocmrevive
    return d


def cause_ids(text: str) -> list[str]:
    """The ids of the first diagnosis's causes, each asserted to carry the check that tells it apart."""
    causes = explain_text(text)[0].details["causes"]
    assert all(c["check"] for c in causes), causes
    return [c["id"] for c in causes]


def explain_cli(text: str, *, stdin: bool = False) -> tuple[int, dict | None]:
    """``rocmrevive --json explain`` on ``text`` (an argument, or standard input): its exit code and JSON document."""
    res = (CliRunner().invoke(cli, ["--json", "explain"], input=text) if stdin
           else CliRunner().invoke(cli, ["--json", "explain", text]))
    try:
        return res.exit_code, json.loads(res.output)
    except ValueError:
        return res.exit_code, None
