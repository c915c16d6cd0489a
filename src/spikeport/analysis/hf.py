"""The same diagnostics for a Hugging Face transformer (seed 002 analyses ALBERT): token cosine similarity
of every hidden state, head correlation and locality of the softmax attention maps. ``transformers`` is an
optional extra (``pip install spikeport[hf]``), imported only here and only when used.

Sequences are fixed-length chunks (no padding): random token ids (seeded), or a text file tokenised with
the model's tokenizer, concatenated and cut into ``seq_len`` chunks. Locality on text uses the 1-D grid
(1, seq_len): the distance is |i - j| positions.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import torch

from spikeport.analysis.model_analysis import METHOD, SCHEMA, SCHEMA_VERSION, write_outputs
from spikeport.analysis.stats import LOCAL_RADIUS, CosineStats, HeadCorrStats, LocalityStats
from spikeport.errors import BackendUnavailableError, DataError

if TYPE_CHECKING:  # transformers ships no type information: these names are Any to mypy
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


def _transformers() -> ModuleType:
    try:
        import transformers
    except ImportError:
        raise BackendUnavailableError(
            "Hugging Face analysis needs `transformers` (pip install 'spikeport[hf]' or pip install transformers)"
        ) from None
    return transformers


def analyze_hf_model(
    model: PreTrainedModel, input_ids: torch.Tensor, batch_size: int = 8, radius: int = LOCAL_RADIUS
) -> dict:
    """All statistics of a Hugging Face encoder/decoder stack on ``input_ids [S, L]``."""
    model.eval()
    cfg = model.config
    depth = cfg.num_hidden_layers
    seq = input_ids.shape[1]
    cos = [CosineStats() for _ in range(depth + 1)]
    heads = [HeadCorrStats() for _ in range(depth)]
    loc = [LocalityStats((1, seq), radius) for _ in range(depth)]
    first_token_mass = [0.0] * depth
    t0 = time.perf_counter()
    for start in range(0, len(input_ids), batch_size):
        ids = input_ids[start : start + batch_size]
        with torch.no_grad():
            out = model(input_ids=ids, output_hidden_states=True, output_attentions=True)
        if not out.attentions or out.attentions[0] is None:
            raise BackendUnavailableError(
                f"{type(model).__name__} returned no attention maps; load it with attn_implementation='eager'"
            )
        for i, h in enumerate(out.hidden_states):
            cos[i].update(h)
        for i, a in enumerate(out.attentions):
            a = a.double()
            heads[i].update(a)
            loc[i].update(a)
            first_token_mass[i] += float(a[..., 1:, 0].mean()) * len(ids)  # attention-sink check (seed 002)
    total = LocalityStats((1, seq), radius)
    for s in loc:
        total.merge(s)
    n = len(input_ids)
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "method": {**METHOD, "locality": METHOD["locality"] + "; text: the grid is (1, seq_len), distance |i-j|"},
        "model": {
            "arch": cfg.model_type,
            "attention": "softmax",
            "depth": depth,
            "num_heads": cfg.num_attention_heads,
            "embed_dim": cfg.hidden_size,
            "grid": [1, seq],
            "tokens": seq,
            "T": None,
            "mlp": True,
            "skip": True,
        },
        "executor": "transformers (torch, eval mode, CPU)",
        "samples": n,
        "accuracy_on_samples": None,
        "representations": [
            {"layer": i, "name": "embedding" if i == 0 else f"layer {i - 1} output", "cosine": c.result()}
            for i, c in enumerate(cos)
        ],
        "blocks": [
            {
                "block": i,
                "head_correlation": heads[i].result(),
                "locality": {"attention": loc[i].result()},
                "first_token_mass": first_token_mass[i] / n,
            }
            for i in range(depth)
        ],
        "locality_overall": {"attention": total.result()},
        "wall_time_s": time.perf_counter() - t0,
    }


def text_chunks(tokenizer: PreTrainedTokenizerBase, path: str | Path, seq_len: int, samples: int) -> torch.Tensor:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: no such text file")
    ids: list[int] = []
    for line in p.read_text(errors="replace").splitlines():
        if line.strip():
            ids += tokenizer(line, add_special_tokens=False)["input_ids"]
    chunks = len(ids) // seq_len
    if chunks == 0:
        raise DataError(f"{p}: {len(ids)} tokens, fewer than one chunk of --seq-len {seq_len}")
    return torch.tensor(ids[: min(chunks, samples) * seq_len]).reshape(-1, seq_len)


def analyze_hf(
    name: str,
    out: str | Path,
    samples: int = 32,
    seq_len: int = 128,
    text_file: str | None = None,
    batch_size: int = 8,
    seed: int = 0,
) -> dict:
    """Load ``name`` (hub id or local folder) with eager attention, analyse, write the outputs."""
    tf = _transformers()
    try:
        model = tf.AutoModel.from_pretrained(name, attn_implementation="eager")
    except (OSError, ValueError) as err:
        raise DataError(f"{name}: cannot load a Hugging Face model ({str(err).splitlines()[0][:200]})") from None
    if text_file:
        ids = text_chunks(tf.AutoTokenizer.from_pretrained(name), text_file, seq_len, samples)
        source = f"text {text_file}"
    else:
        gen = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, model.config.vocab_size, (samples, seq_len), generator=gen)
        source = f"random token ids (seed {seed})"
    result = analyze_hf_model(model, ids, batch_size)
    result["source"] = {"kind": "huggingface", "model": name, "inputs": source}
    return write_outputs(result, out, f"{name} ({source}, {len(ids)} x {seq_len} tokens)")
