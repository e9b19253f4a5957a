"""`quant_int8`, `quant_fp4`: quantisation beyond NF4 (Zhang et al.: 4-bit quantisation brings back
much of what unlearning hid, because unlearning moved the weights by less than a quantisation step).

Both load the checkpoint through bitsandbytes as the robustness setting loads NF4
(`meta_eval.perturb`): embeddings, LM head and norms unquantised, in float32.
- `quant_int8`: LLM.int8 (8-bit weights per row, activations over the outlier threshold 6.0 kept in
  16-bit), evaluated with bitsandbytes' own 8-bit layers: the mixed decomposition is the method.
- `quant_fp4`: 4-bit FP4 weights (block 64, no double quantisation), evaluated through dense
  linears holding the dequantised weights in float32, as NF4 is.
Where bitsandbytes has no kernel for the device, the attack is unavailable for that model and the
others go on.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from meta_eval.attacks.base import (Answered, AttackData, AttackSettings, AttackUnavailable, Target, greedy,
                                    plain_prompts)
from meta_eval.perturb import NF4_BLOCK, dequantize_linears
from uds_core.quiet import quiet_logger

INT8_THRESHOLD = 6.0   # bitsandbytes' default outlier threshold (Dettmers et al.)
# words of an exception that says the quantisation cannot run here rather than that the code is wrong
_UNAVAILABLE = ("cuda", "kernel", "not supported", "not implemented", "no backend", "requires a gpu",
                "compiled without", "bitsandbytes")


@dataclass(frozen=True)
class Quantised:
    name: str
    summary: str
    bits: int   # 8 (LLM.int8) or 4 (FP4)

    def config(self):
        try:
            from transformers import BitsAndBytesConfig
            import bitsandbytes  # noqa: F401
        except ImportError as exc:
            raise AttackUnavailable(f"bitsandbytes is not installed ({exc})") from exc
        if self.bits == 8:
            return BitsAndBytesConfig(load_in_8bit=True, llm_int8_threshold=INT8_THRESHOLD)
        return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="fp4", bnb_4bit_compute_dtype=torch.float32,
                                  bnb_4bit_use_double_quant=False)

    def recipe(self, s: AttackSettings) -> dict:
        import bitsandbytes

        common = {"bitsandbytes": bitsandbytes.__version__, "unquantised_dtype": "torch.float32"}
        if self.bits == 8:
            return common | {"method": "LLM.int8", "outlier_threshold": INT8_THRESHOLD,
                             "evaluated_as": "bitsandbytes 8-bit linears"}
        return common | {"quant_type": "fp4", "block_size": NF4_BLOCK, "double_quant": False,
                         "compute_dtype": "torch.float32",
                         "evaluated_as": "dense linears holding the dequantised FP4 weights"}

    def load(self, target: Target, s: AttackSettings) -> torch.nn.Module:
        import bitsandbytes as bnb

        model = target.load(target.spec, quantization_config=self.config(), device_map={"": s.device})
        if self.bits == 4:
            if dequantize_linears(model) == 0:
                raise AttackUnavailable("bitsandbytes quantised no linear layer of this model")
        elif not any(isinstance(m, bnb.nn.Linear8bitLt) for m in model.modules()):
            raise AttackUnavailable("bitsandbytes quantised no linear layer of this model")
        return model

    def answers(self, target: Target, data: AttackData, s: AttackSettings) -> Answered:
        # LLM.int8 says at every matmul that it casts inputs to 16-bit (a logging warning)
        with warnings.catch_warnings(), quiet_logger("bitsandbytes"):
            warnings.simplefilter("ignore")
            try:
                model = self.load(target, s)
                return Answered(greedy(model, data.tok, plain_prompts(data.tok, data.items), s))
            except (ImportError, NotImplementedError) as exc:
                raise AttackUnavailable(f"{type(exc).__name__}: {exc}") from exc
            except (RuntimeError, ValueError, AssertionError) as exc:
                if any(w in str(exc).lower() for w in _UNAVAILABLE):
                    raise AttackUnavailable(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from exc
                raise


INT8 = Quantised("quant_int8", "LLM.int8 8-bit weights (bitsandbytes)", 8)
FP4 = Quantised("quant_fp4", "4-bit FP4 weights (bitsandbytes), dequantised", 4)
