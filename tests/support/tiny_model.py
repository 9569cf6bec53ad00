"""A tiny random-weight Qwen2 chat model with a locally trained BPE tokenizer, for tests and benches.

No model weights can be downloaded here, and none of the tests need a model that judges well: they
exercise the mechanics (engine start, batching, prefix caching, structured output, accounting).
The model is built from scratch in about two seconds: a byte-level BPE tokenizer trained with
``tokenizers`` on some text (or Qwen's own vocabulary, read from a ``qwen.tiktoken`` rank file, when
the token counts must be the real judge's), a 2-layer Qwen2 with random weights written by ``transformers``
(config + safetensors), and a ChatML chat template, so vLLM (CPU or GPU) and ``vllm serve`` load it
like any Hugging Face model directory.

Usage::

    from tests.support.tiny_model import build_tiny_qwen2
    model_dir = build_tiny_qwen2(tmp_path / "tiny-qwen2")
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

#: ChatML template (the Qwen family's format), with ``add_generation_prompt`` support.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

#: Qwen's pre-tokenizer split (its tokenizer files; digits one by one, unlike GPT-4's ``\p{N}{1,3}``).
QWEN_SPLIT = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

#: Training text used when the caller gives none: enough varied English and JSON to learn useful merges.
_DEFAULT_CORPUS = (
    "The quick brown fox jumps over the lazy dog. Sources cited by AI answers are judged on relevance, "
    "factual accuracy, objectivity, freshness, author accountability, ownership transparency, domain "
    "authority and layout. Each score is an integer from 1 to 5 with a short justification. "
    '{"semantic_relevance": {"score": 4, "justification": "Answers the query with minor gaps."}} '
    "Government and education domains, major news outlets and long-established brands rank highest. "
    "Published on January 25, 2026; last updated 2025-12-01. Advertisement. Buy now. Contact us. About. "
    "0123456789 , . ; : ! ? ( ) [ ] { } \" ' - _ / \\ @ # % & * + = < > | ~ ` ^ $ "
)


def _train_tokenizer(corpus: Iterable[str], vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    return tokenizer


def qwen_tokenizer(rank_file: str | Path):
    """Qwen's byte-level BPE (Qwen 1 to 3 share its 151,643 regular tokens) from a tiktoken rank file.

    The file is ``qwen.tiktoken`` as Qwen's repositories publish it (base64 token, rank per line).
    The result splits text as Qwen's tokenizer does (NFC, then ``QWEN_SPLIT``) and has our three
    ChatML special tokens after the regular ones, as Qwen's vocabulary does.
    """
    from tokenizers import AddedToken, normalizers
    from transformers.convert_slow_tokenizer import TikTokenConverter

    converter = TikTokenConverter(vocab_file=str(rank_file), pattern=QWEN_SPLIT)
    tokenizer = converter.converted()
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in SPECIAL_TOKENS])
    return tokenizer


def build_tiny_qwen2(
    out_dir: str | Path,
    vocab_size: int = 2048,
    hidden_size: int = 128,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 256,
    max_position_embeddings: int = 8192,
    corpus: Iterable[str] | None = None,
    seed: int = 0,
    rank_file: str | Path | None = None,
) -> Path:
    """Write a random-weight Qwen2 chat model directory that vLLM and ``vllm serve`` can load.

    Args:
        out_dir: Target directory (created; files in it are overwritten).
        vocab_size: BPE vocabulary size (the model's embedding rows are padded to a multiple of 64).
        hidden_size: Model width.
        num_layers: Transformer layers.
        num_heads: Attention heads (``hidden_size`` must divide by it).
        num_kv_heads: Key/value heads (grouped-query attention, as in Qwen2).
        intermediate_size: MLP width.
        max_position_embeddings: Longest context the config admits.
        corpus: Texts to train the tokenizer on; a small built-in English/JSON sample when None.
        seed: Torch seed for the random weights (same seed, same weights).
        rank_file: Qwen's ``qwen.tiktoken``: use Qwen's vocabulary (``qwen_tokenizer``) instead of
            training one; ``vocab_size`` and ``corpus`` are then not used.

    Returns:
        The model directory (``out_dir`` as a Path).
    """
    import torch
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if rank_file is not None:
        raw = qwen_tokenizer(rank_file)
    else:
        raw = _train_tokenizer(list(corpus) if corpus is not None else [_DEFAULT_CORPUS] * 4, vocab_size)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=list(SPECIAL_TOKENS),
        model_max_length=max_position_embeddings,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(out)

    padded_vocab = -(-len(tokenizer) // 64) * 64
    config = Qwen2Config(
        vocab_size=padded_vocab,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        bos_token_id=None,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    (out / "generation_config.json").write_text(
        json.dumps({"eos_token_id": config.eos_token_id, "pad_token_id": config.pad_token_id}, indent=2)
    )
    return out
