"""The tiny world's tokenizer: byte-level BPE trained on the world's text, saved as a
transformers fast tokenizer with BOS/EOS/pad and a small chat template."""

from __future__ import annotations

from typing import Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

BOS, EOS, PAD = "<|bos|>", "<|eot|>", "<|pad|>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>")
SPECIALS = (PAD, BOS, EOS) + ROLE_TOKENS

# Role markers are special tokens; each turn ends with the end-of-turn token, which is also eos,
# so generation stops where an assistant turn ends (as Llama-3's <|eot_id|> does).
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] | trim }}<|eot|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """A byte-level BPE of `vocab_size` tokens (specials included) trained on `texts`.

    `encode(text)` prepends BOS (add_special_tokens=True), as Llama tokenizers do; offsets are
    trimmed to exclude the leading space so entity spans align on characters.
    """
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(SPECIALS), min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    core.train_from_iterator(texts, trainer=trainer)
    bos_id = core.token_to_id(BOS)
    core.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=True),
        processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, bos_id)]),
    ])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token=BOS, eos_token=EOS, pad_token=PAD,
        additional_special_tokens=list(ROLE_TOKENS), clean_up_tokenization_spaces=False)
    tok.chat_template = CHAT_TEMPLATE
    tok.padding_side = "right"
    return tok
