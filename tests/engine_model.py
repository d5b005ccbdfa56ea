"""Build the tiny model the real-engine tests serve (run with the engine venv's python, not .venv's):

    .venv-engine/bin/python tests/engine_model.py OUT_DIR

A 2-layer Llama with random weights (seeded) and a byte-level BPE tokenizer trained here with
`tokenizers` on a few paragraphs of this repository's own docs, with a chat template, saved to OUT_DIR.
Nothing is downloaded. Random weights produce garbage text: the output check must reject it.
"""

from __future__ import annotations

import sys
from pathlib import Path

CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")


def build(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    root = Path(__file__).resolve().parent.parent
    corpus = [p.read_text(encoding="utf-8") for p in sorted((root / "docs").glob("*.md"))]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|user|>", "<|assistant|>", "<|system|>"]
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                   unk_token="<|endoftext|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(15)
    eos = fast.convert_tokens_to_ids("<|endoftext|>")
    config = LlamaConfig(vocab_size=len(fast), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
                         bos_token_id=eos, eos_token_id=eos, pad_token_id=eos, tie_word_embeddings=True)
    model = LlamaForCausalLM(config)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    fast.save_pretrained(out)
    model.generation_config.eos_token_id = eos
    model.generation_config.save_pretrained(out)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
    print("ok")
