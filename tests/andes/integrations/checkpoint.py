"""A small random-weight Llama checkpoint that vLLM can load, written in the test (no download).

transformers' own `save_pretrained` writes the weights and config; a byte-level BPE tokenizer
trained on a few sentences writes `tokenizer.json`. The model is random, so its text is
gibberish, but greedy decoding is deterministic, which is all the equivalence tests need.
"""

from __future__ import annotations

from pathlib import Path

from tests.andes.bpe_tokenizer import write_tokenizer

VOCAB = 320
MAX_LEN = 1024


def write_checkpoint(path: Path, seed: int = 0) -> Path:
    """Save a 2-layer Llama (hidden 128, vocab 320) and its tokenizer under `path`; heads of
    32, the smallest size vLLM's CPU attention kernels take."""
    import torch
    import transformers

    path.mkdir(parents=True, exist_ok=True)
    write_tokenizer(
        path,
        VOCAB,
        tokenizer_class="PreTrainedTokenizerFast",
        unk_token="<unk>",
        model_max_length=MAX_LEN,
    )
    cfg = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=MAX_LEN,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.randn_like(p) * 0.2 + (1.0 if name.endswith("norm.weight") else 0.0))
    model.save_pretrained(path)
    return path
