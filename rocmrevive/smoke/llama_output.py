"""llama.cpp's output compared: the tokens a GPU generates against those the CPU generates with the
same binary, the same tiny model and greedy decoding with a fixed seed.

Speed alone passes a kernel that computes garbage (gfx906 owners have seen gibberish from
llama.cpp built without flash-attention); the tokens do not. The model rocmrevive writes has a
byte vocabulary (``gguf_model``): every generated token prints as exactly one byte, so the bytes
after the prompt are the token ids, position for position. llama-completion prints no logits, so
the comparison is on tokens, exactly: the model's weights are float32, so a correct GPU's logits
differ from the CPU's by rounding (relative 1e-6 or so), far below the gap between the top two
logits of a random model (a sizeable share of their spread), and greedy choices do not flip.

    argv = generate_argv(binary, model, ngl=99)
    tokens = generated_tokens(stdout_bytes)       # None when the output is cut short
    diff = first_difference(gpu_tokens, cpu_tokens)   # None when equal
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

GEN_NAMES = ("llama-completion", "llama-cli")
PROMPT = "The quick brown fox jumps over the lazy dog"
GEN_TOKENS = 32
SEED = 906
# -dev none: no GPU at all in the reference run (with -ngl 0 alone, llama.cpp still offloads
# large prompt batches to a GPU it sees)
CPU_ONLY = ["-dev", "none"]


@dataclass(frozen=True)
class Difference:
    position: int           # generated token index, from 0
    got: int | None         # token id on the device (None: it generated fewer)
    expected: int | None    # token id on the CPU


@dataclass(frozen=True)
class GenRun:
    """One greedy generation: where it ran and the tokens it produced (``position``: the first
    token that differs from the CPU's, when one does)."""

    label: str              # "CPU reference", "ROCm0", "all GPUs", "CPU" (test mode)
    argv: list[str]
    env: dict[str, str]
    ok: bool = False
    exit_status: int | None = None
    seconds: float = 0.0
    tokens: list[int] | None = None
    message: str | None = None
    timed_out: bool = False
    position: int | None = None


def find_generator(bench: Path, kind: str, bin_dir) -> Path | None:
    """llama-completion (or llama-cli) beside the benchmark binary; the binary itself when it is one."""
    if kind == "cli":
        return bench
    for name in GEN_NAMES:
        p = bench.parent / name
        if p.is_file():
            return p
    return None


def generate_argv(binary: Path, model: Path, ngl: int, cpu_only: bool = False) -> list[str]:
    """Greedy decoding of GEN_TOKENS tokens, end-of-text ignored, one thread (the reference's
    summation order then never depends on the machine's core count)."""
    return [str(binary), "-m", str(model), "-ngl", str(ngl), "-n", str(GEN_TOKENS), "-p", PROMPT,
            "-no-cnv", "--temp", "0", "--top-k", "1", "-s", str(SEED), "--ignore-eos", "-c", "256",
            "-t", "1"] + (CPU_ONLY if cpu_only else [])


def echo_end(stdout: bytes, prompt: str = PROMPT) -> int | None:
    """Where the prompt's echo ends in llama-completion's output. The tiny model's vocabulary
    has no space token, so SentencePiece's space marker U+2581 is echoed for each space (and
    before the first word): "\u2581The\u2581quick...". None when there is no echo."""
    for form in (prompt.replace(" ", "\u2581"), prompt):
        at = stdout.find(form.encode())
        if at >= 0:
            return at + len(form.encode())
    return None


def generated_tokens(stdout: bytes) -> list[int] | None:
    """The GEN_TOKENS token ids printed after the prompt's echo; None when the output was cut
    short (llama-completion's logger can lose its last lines on exit) or has no prompt echo."""
    end = echo_end(stdout)
    if end is None:
        return None
    gen = stdout[end:]
    return list(gen[:GEN_TOKENS]) if len(gen) >= GEN_TOKENS else None


def first_difference(got: list[int], expected: list[int]) -> Difference | None:
    for i in range(max(len(got), len(expected))):
        g = got[i] if i < len(got) else None
        e = expected[i] if i < len(expected) else None
        if g != e:
            return Difference(i, g, e)
    return None


def difference_message(label: str, diff: Difference, binary: str) -> str:
    """One line naming the device and the first position that differs."""
    def tok(t):
        return "none" if t is None else "%d (byte 0x%02x)" % (t, t)
    return (f"{binary} on {label} generated other tokens than on the CPU with the same binary: "
            f"first difference at generated token {diff.position} ({label}: {tok(diff.got)}, "
            f"CPU: {tok(diff.expected)}); greedy decoding of rocmrevive's tiny model, seed {SEED}: "
            f"the GPU computes wrong results")
