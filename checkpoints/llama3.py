"""Llama 3 offline, from Meta's PyPI wheel `llama-models`: its tokenizer as a transformers folder,
the Llama-3.2 chat format, and the Llama-3.2-1B architecture.

The wheel ships the official tokenizer (`llama_models/llama3/tokenizer.model`, a tiktoken BPE
file), its reference encoder (`llama3/tokenizer.py`, on `tiktoken`), the chat format
(`llama3/chat_format.py`, `llama3_2/text_prompt_format.md`) and the model argument table
(`sku_list.py`). `tokenizer_folder()` converts the BPE file with transformers' `TikTokenConverter`
(the 128000 mergeable ranks as a byte-level BPE, the wheel's split pattern) and adds the wheel's 256
special tokens at the ids its `Tokenizer` gives them; BOS is prepended by the folder's post-processor
(as transformers 4.45 and 5 both read it), EOS = pad = `<|eot_id|>` (spec §1; Open-Unlearning pads with
eos when a tokenizer has no pad token), and the chat template renders the Llama-3.2 text format. The
folder is built once under `$UDS_HOME/llama3/` (atomically, with a digest manifest).
"""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
from pathlib import Path
from typing import Any

from uds_core import manifest
from uds_core.atomic import file_lock, fsync_tree
from uds_core.errors import UdsInputError
from uds_core.paths import uds_home

LLAMA_MODELS_PIN = "0.3.0"
INSTALL = f"pip install 'llama-models=={LLAMA_MODELS_PIN}' tiktoken   (or: pip install 'uds[llama]')"
BOS, EOS_TEXT, EOT = "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"
KNOWLEDGE_CUTOFF = "December 2023"     # the "Cutting Knowledge Date" line of the Llama-3.2 system header
DEFAULT_DATE = "26 Jul 2024"          # the template's date when no date_string is given and no clock is offered

# The Llama-3.2 text chat format (llama3_2/text_prompt_format.md of the wheel): BOS; a system turn
# that always opens with the knowledge-cutoff and date lines, then the (trimmed) system message;
# every other turn as header + trimmed content + <|eot_id|>; the assistant header as generation
# prompt. `date_string` as in the published template (the clock when the renderer offers one).
# Text turns only: tool definitions and tool calls are refused, not rendered.
CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- if tools is defined and tools or custom_tools is defined and custom_tools %}"
    "{{- raise_exception('this Llama-3.2 template renders text turns only, not tools') }}"
    "{%- endif %}"
    "{%- if date_string is not defined %}"
    "{%- if strftime_now is defined %}{%- set date_string = strftime_now('%d %b %Y') %}"
    "{%- else %}{%- set date_string = '" + DEFAULT_DATE + "' %}{%- endif %}"
    "{%- endif %}"
    "{%- if messages and messages[0]['role'] == 'system' %}"
    "{%- set system_text = messages[0]['content'] | trim %}{%- set turns = messages[1:] %}"
    "{%- else %}{%- set system_text = '' %}{%- set turns = messages %}{%- endif %}"
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}"
    "{{- 'Cutting Knowledge Date: " + KNOWLEDGE_CUTOFF + "\\n' }}"
    "{{- 'Today Date: ' + date_string + '\\n\\n' }}"
    "{{- system_text + '<|eot_id|>' }}"
    "{%- for message in turns %}"
    "{%- if message['role'] not in ('user', 'assistant', 'system') %}"
    "{{- raise_exception('this Llama-3.2 template renders text turns only, not role ' + message['role']) }}"
    "{%- endif %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + (message['content'] | trim)"
    " + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)


def system_header_text(date_string: str, system_prompt: str | None) -> str:
    """The system turn's content as the chat format writes it (for `llama_models`' ChatFormat,
    which takes the content as given): cutoff line, date line, blank line, the prompt."""
    return (f"Cutting Knowledge Date: {KNOWLEDGE_CUTOFF}\nToday Date: {date_string}\n\n"
            f"{(system_prompt or '').strip()}")


def _require_wheel() -> None:
    """UdsInputError naming the install command when `llama-models` or `tiktoken` is missing."""
    for module in ("tiktoken", "llama_models"):
        try:
            __import__(module)
        except ImportError as exc:
            raise UdsInputError(f"the Llama 3 tokenizer needs the {module} package, which is not installed "
                                f"({exc.name or module}): {INSTALL}") from None


def wheel_version() -> str:
    _require_wheel()
    return importlib.metadata.version("llama-models")


def official_tokenizer():
    """`llama_models.llama3.tokenizer.Tokenizer` on the wheel's tokenizer.model (Meta's reference encoder)."""
    _require_wheel()
    from llama_models.llama3.tokenizer import Tokenizer

    return Tokenizer.get_instance()


def official_chat_format():
    """`llama_models.llama3.chat_format.ChatFormat` over the official tokenizer."""
    from llama_models.llama3.chat_format import ChatFormat

    return ChatFormat(official_tokenizer())


def tokenizer_model_path() -> Path:
    _require_wheel()
    import llama_models.llama3 as pkg

    return Path(pkg.__file__).parent / "tokenizer.model"


def build_tokenizer():
    """The transformers fast tokenizer of the wheel's BPE file (not saved)."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ref = official_tokenizer()
    specials = [name for name, _ in sorted(ref.special_tokens.items(), key=lambda kv: kv[1])]
    backend = TikTokenConverter(vocab_file=str(tokenizer_model_path()), pattern=ref.pat_str,
                                extra_special_tokens=specials).converted()
    wrong = {name: backend.token_to_id(name) for name in specials
             if backend.token_to_id(name) != ref.special_tokens[name]}
    if wrong:   # the converter appends them after the ranks: a wheel with other counts would shift them
        raise UdsInputError(f"Llama 3 special tokens landed at other ids than the wheel's: {wrong}")
    bos_id = ref.special_tokens[BOS]
    # byte-level offsets untrimmed (a token's offsets cover its leading space), then BOS in front
    backend.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single=f"{BOS}:0 $A:0", pair=f"{BOS}:0 $A:0 {BOS}:1 $B:1",
                                      special_tokens=[(BOS, bos_id)]),
    ])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOS, eos_token=EOT, pad_token=EOT,
                                   chat_template=CHAT_TEMPLATE, model_max_length=131072,
                                   clean_up_tokenization_spaces=True,
                                   model_input_names=["input_ids", "attention_mask"])


def tokenizer_folder(home: Path | None = None) -> Path:
    """The saved tokenizer folder, built on first use: `$UDS_HOME/llama3/tokenizer-<wheel version>/`.
    Its files are checked against their digests on every call (a damaged folder is built again)."""
    version = wheel_version()
    folder = (home or uds_home()) / "llama3" / f"tokenizer-{version}"
    if _whole(folder, quiet=True):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(folder):
        if not _whole(folder):
            save_tokenizer(folder)
    return folder


def _whole(folder: Path, quiet: bool = False) -> bool:
    return (folder / "tokenizer.json").is_file() and manifest.checked(
        folder, quiet, lambda problem: f"Llama 3 tokenizer {folder}: {problem}; building it again")


def save_tokenizer(folder: Path) -> Path:
    """Write the tokenizer folder whole or not at all (a temporary folder, renamed)."""
    from checkpoints.legacy_fields import write_legacy_fields

    tmp = folder.with_name(f".{folder.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        build_tokenizer().save_pretrained(tmp)
        write_legacy_fields(tmp)
        (tmp / "SOURCE.txt").write_text(
            f"Built by uds from llama-models=={wheel_version()} (llama_models/llama3/tokenizer.model) with "
            "transformers' TikTokenConverter; special tokens at the ids of llama_models' Tokenizer.\n")
        manifest.record(tmp)
        fsync_tree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    tmp.replace(folder)
    return folder


def load_tokenizer(home: Path | None = None):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tokenizer_folder(home))


# ---------------------------------------------------------------------------------------------
# Architecture

# Llama-3.2-1B(-Instruct), with where each number comes from. The wheel's `sku_list.arch_args_1b()`
# gives dim, layers, heads, kv heads, vocabulary, ffn multiplier / multiple_of (-> MLP width by
# `llama3/model.py`'s FeedForward rule), norm eps, rope theta and use_scaled_rope; the rest is the
# published Hugging Face config of the checkpoints Open-Unlearning fine-tunes (spec §1: tied
# embeddings; rope_scaling factor 32: the wheel's reference `apply_scaling` hard-codes 8, its
# Llama-3.1 value, while the 3.2 checkpoints' config.json sets 32).
HF_ONLY = {"tie_word_embeddings": True, "max_position_embeddings": 131072,
           "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
           "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]}


def ffn_width(dim: int, multiplier: float | None, multiple_of: int) -> int:
    """MLP width of `llama3/model.py`'s FeedForward (built with hidden_dim = 4 dim)."""
    hidden = int(2 * (4 * dim) / 3)
    if multiplier is not None:
        hidden = int(multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def llama32_1b_args() -> dict[str, Any]:
    """The wheel's own argument table entry of Llama3.2-1B-Instruct (`sku_list`)."""
    _require_wheel()
    from llama_models.sku_list import resolve_model

    model = resolve_model("Llama3.2-1B-Instruct")
    if model is None:
        raise UdsInputError(f"llama-models {wheel_version()} has no Llama3.2-1B-Instruct entry")
    return dict(model.arch_args)


def llama32_1b_config(**overrides):
    """A transformers `LlamaConfig` of Llama-3.2-1B-Instruct (module docstring: sources)."""
    from transformers import LlamaConfig

    a = llama32_1b_args()
    kw = dict(vocab_size=a["vocab_size"], hidden_size=a["dim"], num_hidden_layers=a["n_layers"],
              num_attention_heads=a["n_heads"], num_key_value_heads=a["n_kv_heads"],
              head_dim=a["dim"] // a["n_heads"],
              intermediate_size=ffn_width(a["dim"], a.get("ffn_dim_multiplier"), a["multiple_of"]),
              rms_norm_eps=a["norm_eps"], rope_theta=a["rope_theta"], hidden_act="silu",
              attention_bias=False, mlp_bias=False, **HF_ONLY)
    if not a.get("use_scaled_rope"):
        kw.pop("rope_scaling")
    kw.update(overrides)
    return LlamaConfig(**kw)


def check_vocab_matches(tokenizer, model) -> None:
    """UdsInputError when the tokenizer has more ids than the model's embedding rows (its ids
    would index past the table), said with both numbers."""
    rows = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > rows:
        raise UdsInputError(f"tokenizer has {len(tokenizer)} tokens but the model's embedding has {rows} rows: "
                            "not this model's tokenizer")


def main(argv: list[str] | None = None) -> int:
    """`python -m checkpoints.llama3 [DIR]`: build the folder (or copy it to DIR) and print its path."""
    args = sys.argv[1:] if argv is None else argv
    folder = tokenizer_folder()
    if args:
        out = Path(args[0])
        shutil.copytree(folder, out, dirs_exist_ok=True)
        folder = out
    print(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
