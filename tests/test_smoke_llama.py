"""llama.cpp smoke: the tiny GGUF written here runs in a real llama-bench (and llama-completion)
built for the CPU from llama.cpp's source; binaries that fail, hang or print nothing are failures.

The per-GPU orchestration is checked with the real llama-bench behind a wrapper that plays a
ROCm build with two GPUs (the only fake part: the GPUs).
"""
from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from rocmrevive.smoke import llama
from rocmrevive.smoke.gguf_model import TinyLlama, write_tiny_llama

import gguf  # noqa: E402  (a dependency of `rocmrevive smoke`: pip install gguf)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return write_tiny_llama(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


def _field(reader, key):
    f = reader.fields[key]
    v = f.parts[f.data[0]]
    return bytes(v).decode() if f.types[0] == gguf.GGUFValueType.STRING else v.tolist()[0]


# --- the model ------------------------------------------------------------------------------
def test_tiny_model_is_a_small_llama(model, tmp_path):
    size = model.stat().st_size
    assert 400_000 < size < 600_000
    r = gguf.GGUFReader(str(model))
    assert _field(r, "general.architecture") == "llama"
    assert _field(r, "llama.block_count") == 2
    assert _field(r, "llama.embedding_length") == 64
    assert _field(r, "tokenizer.ggml.model") == "llama"
    assert len(r.fields["tokenizer.ggml.tokens"].data) == 256
    names = {t.name for t in r.tensors}
    assert len(names) == 3 + 2 * 9 and "blk.1.ffn_down.weight" in names
    down = next(t for t in r.tensors if t.name == "blk.0.ffn_down.weight")
    assert list(down.shape) == [128, 64]  # ggml order: n_ff, n_embd
    # deterministic: the same spec gives the same bytes; another seed, other weights
    again = write_tiny_llama(tmp_path / "again.gguf")
    assert again.read_bytes() == model.read_bytes()
    other = write_tiny_llama(tmp_path / "other.gguf", TinyLlama(seed=1))
    assert other.read_bytes() != model.read_bytes() and other.stat().st_size == size


# --- the real llama.cpp ---------------------------------------------------------------------
def test_real_llama_bench_runs_the_model_in_cpu_test_mode(llama_bin, model):
    res = llama.run_llama_smoke(llama_bin, timeout=120, cpu_test_mode=True, model=model)
    assert res["status"] == "passed", res["reason"]
    assert res["kind"] == "bench" and res["backends"] == "CPU" and res["gpu_backend"] is False
    (run,) = res["runs"]
    assert run["ok"] and run["exit_status"] == 0 and run["label"] == "CPU"
    assert run["prompt_tps"] > 100 and run["gen_tps"] > 10  # real tokens/s of a tiny model


def test_real_cpu_only_build_is_reported_as_such(llama_bin):
    res = llama.run_llama_smoke(llama_bin, timeout=120)  # writes its own model
    assert res["status"] == "unavailable" and res["gpu_backend"] is False
    assert "built without a GPU backend" in res["reason"] and "backend CPU" in res["reason"]
    assert res["cpu_run"]["ok"] and res["cpu_run"]["gen_tps"] > 0
    assert res["model"]["bytes"] > 400_000 and not Path(res["model"]["path"]).exists()  # cleaned up


def test_real_llama_completion_when_there_is_no_llama_bench(llama_bin, model, tmp_path):
    (tmp_path / "llama-completion").symlink_to(llama_bin / "llama-completion")
    res = llama.run_llama_smoke(tmp_path, timeout=120, cpu_test_mode=True, model=model)
    assert res["status"] == "passed", res["reason"]
    assert res["kind"] == "cli"
    (run,) = res["runs"]
    assert run["gen_tps"] > 0 and run["prompt_tps"] > 0 and run["backends"] == "CPU"


# --- failures -------------------------------------------------------------------------------
def _exe(folder: Path, name: str, body: str, shebang="#!/bin/sh") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text(shebang + "\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


@pytest.mark.parametrize("body,expect", [
    ('echo "error: failed to load model" >&2; exit 1\n', "exited with status 1: error: failed to load model"),
    ("exit 0\n", "exited 0 but printed no result"),
    ('echo "[]"\n', "exited 0 but printed no result"),
    ("kill -SEGV $$\n", "signal 11"),
    ('echo \'[{"n_prompt": 64, "n_gen": 0, "avg_ts": 0, "backends": "CPU", "gpu_info": ""}]\'\n',
     "printed no usable tokens/s"),
])
def test_a_binary_that_fails_or_prints_nothing_is_a_failure(tmp_path, model, body, expect):
    _exe(tmp_path / "bin", "llama-bench", 'case "$1" in --list-devices) echo "Available devices:"; '
         'echo "  (none)"; exit 0;; esac\n' + body)
    res = llama.run_llama_smoke(tmp_path / "bin", timeout=30, cpu_test_mode=True, model=model)
    assert res["status"] == "failed"
    assert expect in res["reason"], res["reason"]
    assert res["runs"][0]["ok"] is False


def test_a_hanging_binary_is_a_failure(tmp_path, model):
    _exe(tmp_path / "bin", "llama-bench", 'case "$1" in --list-devices) echo "Available devices:"; '
         'echo "  (none)"; exit 0;; esac\nsleep 60\n')
    res = llama.run_llama_smoke(tmp_path / "bin", timeout=2, cpu_test_mode=True, model=model)
    assert res["status"] == "failed" and res["runs"][0]["timed_out"]
    assert "did not finish within 2 s: a hang" in res["reason"]
    assert res["runs"][0]["seconds"] < 15


def test_no_binary(tmp_path, monkeypatch):
    res = llama.run_llama_smoke(tmp_path, timeout=5)
    assert res["status"] == "unavailable" and "no llama-bench" in res["reason"]
    assert f"in {tmp_path}" in res["reason"]
    monkeypatch.setenv("PATH", str(tmp_path))
    res = llama.run_llama_smoke(None, timeout=5)
    assert res["status"] == "unavailable" and "on PATH" in res["reason"]


# --- per GPU, then all: the real llama-bench behind a wrapper that plays 2 ROCm GPUs ---------
WRAPPER = r'''
import json, os, subprocess, sys
REAL, LOG, FAIL_ON = {real!r}, {log!r}, {fail_on!r}
GPUS = ["AMD Instinct MI50/MI60", "AMD Instinct MI50/MI60"]
vis = os.environ.get("HIP_VISIBLE_DEVICES")
ids = [int(x) for x in vis.split(",")] if vis else list(range(len(GPUS)))
if sys.argv[1:] == ["--list-devices"]:
    print("Available devices:")
    for n, i in enumerate(ids):
        print("  ROCm%d: %s (32752 MiB, 32694 MiB free)" % (n, GPUS[i]))
    sys.exit(0)
with open(LOG, "a") as f:
    f.write(json.dumps({{"HIP_VISIBLE_DEVICES": vis, "argv": sys.argv[1:]}}) + "\n")
if FAIL_ON is not None and vis == FAIL_ON:
    sys.stderr.write("rocBLAS error: Cannot read TensileLibrary.dat: No such file or directory\n")
    sys.stderr.write("hipErrorNoBinaryForGpu: Unable to find code object for all current devices!\n")
    sys.exit(134)
r = subprocess.run([REAL] + sys.argv[1:], capture_output=True, text=True)
rows = json.loads(r.stdout)
for row in rows:
    row["backends"] = "ROCm"
    row["gpu_info"] = ", ".join(GPUS[i] for i in ids)
print(json.dumps(rows, indent=2))
sys.exit(r.returncode)
'''


def _rocm_wrapper(folder: Path, llama_bin: Path, fail_on=None) -> Path:
    log = folder / "calls.jsonl"
    _exe(folder / "bin", "llama-bench",
         WRAPPER.format(real=str(llama_bin / "llama-bench"), log=str(log), fail_on=fail_on),
         shebang="#!" + sys.executable)
    return log


def test_each_gpu_alone_then_all(tmp_path, llama_bin, model, monkeypatch):
    monkeypatch.delenv("HIP_VISIBLE_DEVICES", raising=False)
    log = _rocm_wrapper(tmp_path, llama_bin)
    seen = []
    res = llama.run_llama_smoke(tmp_path / "bin", timeout=60, model=model, on_run=seen.append)
    assert res["status"] == "passed", res["reason"]
    assert res["gpu_backend"] is True and res["backends"] == "ROCm"
    assert [d["name"] for d in res["devices"]] == ["ROCm0", "ROCm1"]
    assert [r["label"] for r in res["runs"]] == ["ROCm0", "ROCm1", "all GPUs"]
    calls = [json.loads(x) for x in log.read_text().splitlines()]
    assert [c["HIP_VISIBLE_DEVICES"] for c in calls] == ["0", "1", None]
    assert all(c["argv"][c["argv"].index("-ngl") + 1] == "99" for c in calls)
    assert all(r["gen_tps"] > 0 and r["prompt_tps"] > 0 for r in res["runs"])
    assert res["runs"][2]["gpu_info"].count("MI50") == 2
    assert [r.label for r in seen] == ["ROCm0", "ROCm1", "all GPUs"]


def test_user_visibility_is_kept(tmp_path, llama_bin, model, monkeypatch):
    """HIP_VISIBLE_DEVICES=1 already: llama.cpp's ROCm0 is the machine's GPU 1."""
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    log = _rocm_wrapper(tmp_path, llama_bin)
    res = llama.run_llama_smoke(tmp_path / "bin", timeout=60, model=model)
    assert res["status"] == "passed", res["reason"]
    assert [r["label"] for r in res["runs"]] == ["ROCm0"]
    assert [json.loads(x)["HIP_VISIBLE_DEVICES"] for x in log.read_text().splitlines()] == ["1"]
    assert res["warnings"] == ["one GPU: no all-GPUs run"]


def test_one_gpu_failing_fails_the_smoke(tmp_path, llama_bin, model, monkeypatch):
    monkeypatch.delenv("HIP_VISIBLE_DEVICES", raising=False)
    _rocm_wrapper(tmp_path, llama_bin, fail_on="1")
    res = llama.run_llama_smoke(tmp_path / "bin", timeout=60, model=model)
    assert res["status"] == "failed"
    assert [(r["label"], r["ok"]) for r in res["runs"]] == [("ROCm0", True), ("ROCm1", False), ("all GPUs", True)]
    assert res["reason"].startswith("llama-bench on ROCm1 exited with status 134")
    assert "hipErrorNoBinaryForGpu" in res["reason"]


def test_parsers():
    text = "Available devices:\n  ROCm0: AMD Instinct MI50/MI60 (32752 MiB, 32694 MiB free)\n  Vulkan1: AMD Radeon Graphics (RADV VEGA20) (16368 MiB, 16000 MiB free)\n"
    devs = llama.parse_list_devices(text)
    assert [(d.name, d.backend, d.index, d.memory_mib) for d in devs] == [
        ("ROCm0", "ROCm", 0, 32752), ("Vulkan1", "Vulkan", 1, 16368)]
    assert devs[1].description == "AMD Radeon Graphics (RADV VEGA20)"
    assert llama.parse_list_devices("error: unknown argument: --list-devices") is None
    assert llama.parse_list_devices("Available devices:\n  (none)\n") == []
    assert llama._visible_env(devs[1]) == ({"GGML_VK_VISIBLE_DEVICES": "1"}, [])
    assert llama._visible_env(llama.LlamaDevice("SYCL0", "SYCL", 0)) == ({}, ["-dev", "SYCL0"])
    cli = ("common_perf_print: prompt eval time =  0.33 ms / 16 tokens ( 0.02 ms per token, 48780.49 tokens per second)\n"
           "common_perf_print:        eval time =  6.15 ms / 15 runs   ( 0.41 ms per token,  2437.84 tokens per second)\n")
    assert llama.parse_cli_timings(cli) == (48780.49, 2437.84)
    assert llama.parse_cli_timings("nothing") == (None, None)
    assert llama.parse_bench_json("garbage") is None
    assert llama.parse_bench_json('log line\n[{"avg_ts": 1.0}]') == [{"avg_ts": 1.0}]


def test_without_the_gguf_package_llama_is_unavailable(tmp_path, monkeypatch):
    _exe(tmp_path / "bin", "llama-bench", "exit 0\n")
    monkeypatch.setitem(sys.modules, "gguf", None)  # import gguf -> ImportError
    res = llama.run_llama_smoke(tmp_path / "bin", timeout=5)
    assert res["status"] == "unavailable" and "pip install gguf" in res["reason"]
    assert res["runs"] == []
