"""A byte-level BPE tokenizer trained in the test on a few sentences, written as the
`tokenizer.json` and `tokenizer_config.json` a Hugging Face checkpoint carries (no download)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

CORPUS = ["the quick brown fox jumps over the lazy dog", "hello world, streaming tokens"] * 20
CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}"
    "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"
)


def write_tokenizer(path: Path, vocab_size: int, **config: Any) -> Tokenizer:
    """Train and save it under `path`; `config` adds keys to `tokenizer_config.json`."""
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.save(str(path / "tokenizer.json"))
    settings = {"bos_token": "<s>", "eos_token": "</s>", "chat_template": CHAT_TEMPLATE}
    (path / "tokenizer_config.json").write_text(json.dumps(settings | config))
    return tok
