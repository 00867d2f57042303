"""A tiny llama-architecture GGUF model written here, with random weights: nothing to download.

2 layers, 64 wide, 4 heads, a 128-wide SwiGLU feed-forward, a 256-token byte vocabulary
("<0x00>".."<0xFF>", SentencePiece byte tokens) and float32 weights: about 0.5 MB. Enough for
`llama-bench` to load it, offload every layer (`-ngl 99`) and measure tokens/s; the text it
would generate is noise, which a benchmark does not look at.

    from rocmrevive.smoke.gguf_model import write_tiny_llama
    write_tiny_llama(Path("/tmp/tiny.gguf"))

Needs the ``gguf`` package (and numpy, which it brings); imported only here.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rocmrevive.errors import RevError


@dataclass(frozen=True)
class TinyLlama:
    layers: int = 2
    width: int = 64
    heads: int = 4
    kv_heads: int = 4
    ffn: int = 128
    vocab: int = 256
    context: int = 512
    seed: int = 906


def _import_gguf():
    try:
        import gguf  # noqa: F401, PLC0415 — gguf and numpy are the optional `smoke` extra
        import numpy  # noqa: F401, PLC0415 — gguf and numpy are the optional `smoke` extra
    except ImportError as exc:
        raise RevError("USAGE", f"the `gguf` Python package is needed to write the test model "
                                f"({exc}); install it with `pip install gguf`") from exc
    return gguf, numpy


def write_tiny_llama(path: str | os.PathLike, spec: TinyLlama = TinyLlama()) -> Path:
    """Write the model to ``path`` (atomically) and return it. Same spec, same bytes."""
    gguf, np = _import_gguf()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    head_dim = spec.width // spec.heads

    tmp = path.with_name(path.name + ".tmp")
    w = gguf.GGUFWriter(str(tmp), "llama")
    w.add_name("rocmrevive smoke tiny llama")
    w.add_context_length(spec.context)
    w.add_embedding_length(spec.width)
    w.add_block_count(spec.layers)
    w.add_feed_forward_length(spec.ffn)
    w.add_head_count(spec.heads)
    w.add_head_count_kv(spec.kv_heads)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(spec.vocab)

    # tokenizer: SentencePiece ("llama") with the 256 byte tokens only
    w.add_tokenizer_model("llama")
    w.add_token_list([f"<0x{b:02X}>" for b in range(spec.vocab)])
    w.add_token_scores([0.0] * spec.vocab)
    w.add_token_types([int(gguf.TokenType.BYTE)] * spec.vocab)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(False)
    w.add_add_eos_token(False)

    def weight(*shape, scale=0.02):  # numpy shape = ggml shape reversed
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    ones = np.ones(spec.width, dtype=np.float32)
    w.add_tensor("token_embd.weight", weight(spec.vocab, spec.width))
    w.add_tensor("output_norm.weight", ones.copy())
    w.add_tensor("output.weight", weight(spec.vocab, spec.width))
    kv = spec.kv_heads * head_dim
    for i in range(spec.layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", ones.copy())
        w.add_tensor(p + "attn_q.weight", weight(spec.width, spec.width))
        w.add_tensor(p + "attn_k.weight", weight(kv, spec.width))
        w.add_tensor(p + "attn_v.weight", weight(kv, spec.width))
        w.add_tensor(p + "attn_output.weight", weight(spec.width, spec.width))
        w.add_tensor(p + "ffn_norm.weight", ones.copy())
        w.add_tensor(p + "ffn_gate.weight", weight(spec.ffn, spec.width))
        w.add_tensor(p + "ffn_up.weight", weight(spec.ffn, spec.width))
        w.add_tensor(p + "ffn_down.weight", weight(spec.width, spec.ffn))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, path)
    return path
