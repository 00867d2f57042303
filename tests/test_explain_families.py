"""explain beyond the exact words its rules were written for: hipBLASLt's own 'No paths matched'
(the first line many gfx906 PyTorch users see), HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, a
hipErrorNoBinaryForGpu that names a binary (inspect it), the Ollama answer as the README gives it,
and failure families: the component, the error code, the GPU target and the path a line names,
tried on real texts from public trackers (tests/explain_real_texts.py), some held out."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from rocmrevive.diagnose.explain import explain_text
from tests.conftest import REPO
from tests.explain_real_texts import HELD_OUT, RULES_FROM


def _rules(text: str) -> set[str]:
    return {d.rule for d in explain_text(text)}


def _explain(*args: str):
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--json", "explain", *args],
                       capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"}, cwd=REPO)
    return r.returncode, json.loads(r.stdout)


def test_hipblaslt_finding_no_gfx906_files_is_harmless():
    rc, doc = _explain(RULES_FROM[0][1])
    (d,) = doc["diagnoses"]
    # harmless on gfx906 since the tenth pass (hipBLASLt never had gfx906 kernels); a warning for other GPUs
    assert rc == 0 and d["rule"] == "hipblaslt-no-files" and d["severity"] == "harmless"
    assert d["library"] == "hipBLASLt" and d["arch"] == "gfx906"
    assert "ROCBLAS_USE_HIPBLASLT" in d["fix"] and "rocBLAS" in d["cause"]
    assert d["details"]["searched"].endswith("*gfx906*co")


def test_memory_aperture_violation():
    rc, doc = _explain(RULES_FROM[3][1])
    (d,) = doc["diagnoses"]
    assert rc == 0 and d["rule"] == "hsa-memory-aperture-violation" and d["severity"] == "error"
    assert "HSA_OVERRIDE_GFX_VERSION" in d["fix"] and "AMD_SERIALIZE_KERNEL=3" in d["fix"]


def test_no_binary_for_gpu_naming_a_binary_suggests_inspecting_it():
    (d,) = explain_text('"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!" '
                        "in /home/alice/llama.cpp/build/bin/llama-server")
    assert d.rule == "hip-no-binary-for-gpu"
    assert d.fix.startswith("rocmrevive inspect /home/alice/llama.cpp/build/bin/llama-server")
    (d,) = explain_text("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!")
    assert "rocmrevive inspect" not in d.fix and "rocmrevive audit" in d.fix


def test_the_ollama_answer_says_what_the_readme_says():
    (d,) = explain_text('msg="amdgpu is not supported (supported types:[gfx1030 gfx1100 gfx90a gfx942])" '
                        "gpu_type=gfx906")
    readme = (REPO / "README.md").read_text()
    assert "Ollama's current bundle (rocBLAS 5.2) gets the gfx906 Tensile files" in readme
    assert "patches the rocBLAS inside Ollama's bundle" in d.fix and d.fixable_by_rocmrevive
    assert "libggml-hip" in d.fix and "rocmrevive audit" in d.fix
    assert "not the copy Ollama ships" not in (d.why_not or "") + d.fix


def test_a_line_naming_a_file_or_folder_gets_the_command_that_checks_it():
    # rocBLAS's "Could not load" is a catalogue entry since issue 38 (read from tensile_host.cpp); the
    # entry names the folder's check as the family did
    (d,) = explain_text("rocBLAS error: Could not load /opt/rocm-6.4.3/lib/rocblas/library/"
                        "TensileLibrary_lazy_gfx906.dat")
    assert d.rule == "rocblas-could-not-load" and d.arch == "gfx906"
    assert d.fix.startswith("rocmrevive verify --tree /opt/rocm-6.4.3/lib/rocblas/library")
    (d,) = explain_text("hipModuleLoad failed: /usr/lib/ollama/rocm/libggml-hip.so: hipErrorSharedObjectInitFailed")
    assert d.rule == "family-code-object" and d.fix.startswith("rocmrevive inspect /usr/lib/ollama/rocm/libggml-hip.so")
    assert d.details["error"] == "SharedObjectInitFailed"
    # a line that only mentions a library is no failure
    assert explain_text("rocBLAS version: 4.4.1.60403 Tensile-commit-hash: 1234") == []
    assert explain_text("loaded /opt/rocm/lib/librocblas.so.4") == []


def test_every_text_the_rules_were_written_from_is_recognised():
    missed = [(src, _rules(text)) for src, text, want in RULES_FROM if not _rules(text) & want]
    assert missed == []


def test_held_out_real_texts_are_mostly_recognised_with_a_fitting_cause():
    """Texts collected after the rules were written (tests/explain_real_texts.py): 16 of 20 with the
    families (8 of 20 with ab85841's rules alone). The misses are kept as they are, not tuned away."""
    hits = [src for src, text, want in HELD_OUT if _rules(text) & want]
    assert len(HELD_OUT) == 20 and len(hits) >= 16, sorted(set(s for s, _, _ in HELD_OUT) - set(hits))
