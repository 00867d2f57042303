"""vLLM 0.32.0, 0.33.0, 0.34.0 on gfx906: with no dtype chosen, a bf16 model runs in bf16 (vLLM turns
"gfx906" into capability (9, 0), so its bf16 check passes), on the card's fp32 units. The patch
``vllm-rocm-gfx906-fp16-default`` makes the release's own ``_resolve_auto_dtype`` take float16 there,
and ``rocmrevive rccl env`` says so in the env file. Tested on the releases' real wheels
(tests/test_stacks_vllm.py's fixture): the function is taken from the installed file, before and
after ``patch apply``, and run with the release's own model-type table; the file is rolled back
byte for byte."""
from __future__ import annotations

import ast
import sys
import types

import pytest
import torch

from tests.cli_support import rr_parsed as rr
from tests.machines.build import build
from tests.test_stacks_vllm import VERSIONS, releases, venv_with  # noqa: F401  (releases: a fixture)

PID = "vllm-rocm-gfx906-fp16-default"
MODEL = "vllm/config/model.py"


class _Platform:
    """What _resolve_auto_dtype asks of current_platform (vLLM's RocmPlatform answers the same for
    gfx906: the interface's default supported_dtypes, capability (9, 0))."""

    supported_dtypes = [torch.bfloat16, torch.float16, torch.float32]

    def is_rocm(self):
        return True

    def get_device_name(self):
        return "AMD Instinct MI50/MI60"

    def get_device_capability(self):
        return types.SimpleNamespace(as_version_str=lambda: "9.0")


def resolver(source: bytes, arch: str, monkeypatch, warnings: list):
    """The release's ``_resolve_auto_dtype`` (and the ``_is_valid_dtype`` and model-type table it
    uses), compiled from ``source``, running on a gcnArch ``arch``."""
    tree = ast.parse(source)
    keep = [n for n in tree.body if (isinstance(n, ast.FunctionDef) and n.name in ("_resolve_auto_dtype",
                                                                                   "_is_valid_dtype"))
            or (isinstance(n, (ast.Assign, ast.AnnAssign)) and "_FLOAT16_NOT_SUPPORTED_MODELS" in ast.unparse(n))]
    ns = {"torch": torch, "current_platform": _Platform(),
          "logger": types.SimpleNamespace(warning=lambda *a: warnings.append(a[0] % a[1:]))}
    exec(compile(ast.Module(keep, []), MODEL, "exec"), ns)
    rocm = types.ModuleType("vllm.platforms.rocm")
    rocm._GCN_ARCH = arch
    for name, mod in (("vllm", types.ModuleType("vllm")), ("vllm.platforms", types.ModuleType("vllm.platforms")),
                      ("vllm.platforms.rocm", rocm)):
        monkeypatch.setitem(sys.modules, name, mod)
    return lambda model_type, config_dtype: ns["_resolve_auto_dtype"](model_type, config_dtype,
                                                                      is_pooling_model=False)


@pytest.mark.parametrize("version", VERSIONS)
def test_auto_dtype_takes_fp16_on_gfx906_after_the_patch(tmp_path, releases, version, monkeypatch):  # noqa: F811
    root = tmp_path / "m"
    site = venv_with(root, releases[version])
    model = site / MODEL
    original = model.read_bytes()
    bf16, fp16, fp32 = torch.bfloat16, torch.float16, torch.float32
    warned: list[str] = []

    before = resolver(original, "gfx906:sramecc+:xnack-", monkeypatch, warned)
    assert (before("llama", bf16), before("llama", fp32), before("llama", fp16)) == (bf16, bf16, fp16)

    rc, doc, err = rr(root, "--json", "patch", "apply", PID)
    assert rc == 0 and doc["changed"] is True and doc["status"]["state"] == "applied", err
    patched = model.read_bytes()
    compile(patched, MODEL, "exec")

    after = resolver(patched, "gfx906:sramecc+:xnack-", monkeypatch, warned)
    assert (after("llama", bf16), after("llama", fp32), after("llama", fp16)) == (fp16, fp16, fp16)
    assert warned and "gfx906 runs torch.bfloat16 on its fp32 units" in warned[0]
    assert after("gemma3", bf16) == bf16          # vLLM refuses fp16 for Gemma: its bf16 is kept
    for arch in ("gfx90a:sramecc+:xnack-", "gfx942", "gfx1030", "gfx1100"):   # other cards: unchanged
        a, b = resolver(original, arch, monkeypatch, []), resolver(patched, arch, monkeypatch, [])
        assert [b("llama", d) for d in (bf16, fp32, fp16)] == [a("llama", d) for d in (bf16, fp32, fp16)]

    # an explicit --dtype never reaches the patched function: it is called only under dtype == "auto"
    fn = next(n for n in ast.parse(patched).body if isinstance(n, ast.FunctionDef) and n.name == "_get_and_verify_dtype")
    def calls_resolver(stmt) -> bool:
        return isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and \
            getattr(stmt.value.func, "id", None) == "_resolve_auto_dtype"

    guards = [ast.unparse(n.test) for n in ast.walk(fn) if isinstance(n, ast.If) and any(map(calls_resolver, n.body))]
    assert guards in (['dtype == "auto"'], ["dtype == 'auto'"]), guards

    rc, doc, err = rr(root, "--json", "patch", "rollback", PID)
    assert rc == 0, err
    assert model.read_bytes() == original


def test_the_env_file_says_why(tmp_path):
    root = build("dual-mi50", tmp_path / "m")
    rc, text, err = rr(root, "rccl", "env")
    assert rc == 0, err
    assert "# note: vLLM 0.32-0.34 read gfx906 as capability (9, 0)" in text
    assert f"patch apply {PID}" in text and "--dtype float16" in text
