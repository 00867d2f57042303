"""An independent review of the loader, libdrm, PyTorch 'CUDA error:' wording, vLLM float32 and severity-order
additions to the explain catalogue: each test holds one answer the review found wrong and now must stay right."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.diagnose.explain import explain_text
from tests.explain_checks import explain_cli

# ------------------------------------------------------------------------------------------
# what the loader entries say `rocmrevive install --check` does must be what the command does

_LOADER_LINES = [
    "/opt/rocm/lib/libhipblas.so.2: undefined symbol: rocsolver_sgetrf",
    "python3: symbol lookup error: /opt/rocm/lib/librocblas.so.4: undefined symbol: hipGetDevicePropertiesR0600",
    "/opt/rocm/lib/librocblas.so.4: version `ROCBLAS_4.0' not found (required by /usr/lib/ollama/libggml-hip.so)",
]


def test_install_check_changes_nothing_per_its_help():
    res = CliRunner().invoke(cli, ["install", "--help"])
    assert res.exit_code == 0 and re.search(r"--check.*\n?.*change\s+nothing", res.output)


@pytest.mark.parametrize("line", _LOADER_LINES)
def test_the_loader_answers_say_install_check_only_shows_and_install_applies(line):
    (d,) = explain_text(line)
    fix = d.fix or ""
    # --check plans, fetches and verifies and changes nothing (install --help): the answer must not say it adds files
    assert not re.search(r"install --check: it (?:adds|replaces)", fix), fix
    assert re.search(r"sudo rocmrevive install --check[^;]*chang\w* nothing", fix), fix
    # the step that writes is the install without --check
    assert re.search(r"sudo rocmrevive install(?! --check)\b", fix), fix
    code, out = explain_cli(line + "\n", stdin=True)
    assert code == 0 and out and "install --check: it adds" not in out["diagnoses"][0]["fix"]
