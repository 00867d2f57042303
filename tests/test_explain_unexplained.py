"""A paste whose only recognised lines are warnings, harmless or context lines, beside a line that states a failure
explain does not know (a compiler's "error:", an uncaught exception, a crash): the failure's line is named as not
recognised and the exit is 3, rather than the warning answered first as if it were the cause (held-out set M: vLLM's
hipBLASLt fallback warning above LLVM's 'stack frame size exceeds limit' in Triton's compile). Log-level words
(ERROR:, level=error) do not count: tools print them for consequences as much as for failures."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.diagnose.explain import FAILURE_LINE, answer, explain_text, unexplained_failure
from tests.explain_checks import explain_cli

HIPBLASLT = ("/opt/vllm/vllm/model_executor/layers/linear.py:135: UserWarning: Attempting to use hipBLASLt on an "
             "unsupported architecture! Overriding blas backend to hipblas (Triggered internally at "
             "../aten/src/ATen/Context.cpp:296.)")
STACK = ("error: triton_flash_attention.py:211:0: stack frame size (164332) exceeds limit (131056) in function "
         "'attn_fwd_0d1d2d3de45de6d7'")


def test_warnings_beside_an_unknown_failure_are_no_answer():
    text = "\n".join([HIPBLASLT, "  return F.linear(x, layer.weight, bias)", STACK])
    code, doc = explain_cli(text, stdin=True)
    assert code == 3 and doc["error"]["code"] == "NOTHING_SUPPORTED"
    assert doc["unexplained"] == {"line": 3, "text": STACK}
    assert [d["rule"] for d in doc["diagnoses"]] == ["torch-hipblaslt-unsupported"]   # still read, not the answer
    assert "line 3" in doc["error"]["message"]
    got = answer(text)   # what the CLI and the held-out measure read
    assert not got.answered and got.unexplained == (3, STACK) and got.found[0].rule == "torch-hipblaslt-unsupported"


def test_the_human_answer_names_the_line_and_shows_it_escaped():
    text = "\n".join([HIPBLASLT, STACK.replace("stack frame", "stack\x1b[31m frame")])
    res = CliRunner().invoke(cli, ["explain"], input=text)
    assert res.exit_code == 3
    assert "not recognised line 2: the failure" in res.output and "\x1b" not in res.output
    assert "warning line 1" in res.output


@pytest.mark.parametrize("other", [
    # a recognised failure: answered as before (exit 0)
    "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU "
    "arch : gfx906",
    # no line states a failure
    "  return F.linear(x, layer.weight, bias)",
    # log levels are not failure statements
    "ERROR: GPU[0]\t: Unable to parse Power OverDrive range",
    'time=2026-03-01T10:00:00Z level=ERROR source=server.go:1 msg="request canceled"',
])
def test_a_recognised_failure_or_no_failure_line_keeps_the_answer(other):
    text = "\n".join([HIPBLASLT, other])
    assert unexplained_failure(text, explain_text(text)) is None and answer(text).answered
    code, doc = explain_cli(text, stdin=True)
    assert code == 0 and doc["unexplained"] is None


@pytest.mark.parametrize("line", [
    "kernel.hip:12:5: error: use of undeclared identifier 'foo'",
    "fatal error: hip/hip_runtime.h: No such file or directory",
    "error: triton_flash_attention.py:211:0: stack frame size (1) exceeds limit (0)",
    'loc("/x/y.py":22:0): error: unsupported thing',
    "RuntimeError: something went wrong",
    "torch._dynamo.exc.InductorError: LoweringException",
    "Traceback (most recent call last):",
    "terminate called after throwing an instance of 'std::runtime_error'",
    "app: main.c:12: main: Assertion `n > 0' failed.",
    "Segmentation fault (core dumped)",
    "Error: model requires more system memory",
    "panic: runtime error: index out of range",
])
def test_lines_that_state_a_failure(line):
    assert FAILURE_LINE.search(line), line


@pytest.mark.parametrize("line", [
    "ERROR: GPU[0] : Unable to parse Power OverDrive range",
    'level=error msg="x"',
    "E0000 00:00:1 failed to x",
    "UserWarning: Attempting to use hipBLASLt on an unsupported architecture!",
    "errors: 0",
    "no errors found",
])
def test_lines_that_do_not(line):
    assert not FAILURE_LINE.search(line), line
