"""Fluency of the forget-set generations (spec §4.6 and 12).

Two declared measures; every output names the one used (`fluency_source`):
- "classifier:<path>": the gibberish classifier from a local folder, mean softmax probability of
  class 0 ("clean"), inputs truncated to 32 tokens, batches of 32 (spec §4.6);
- "base-lm-proxy": the tiny world's offline stand-in (spec §12), see `utility.proxy_fluency`.
"""

from __future__ import annotations

from typing import Sequence

import torch

from uds_core.batching import batches
from metrics.utility import clean_class_prob
from uds_core.errors import UdsInputError

CLASSIFIER_MAX_TOKENS = 32
CLASSIFIER_BATCH = 32
PROXY_SOURCE = "base-lm-proxy"


def classifier_source(path: str) -> str:
    return f"classifier:{path}"


@torch.no_grad()
def classifier_clean_probs(path: str, texts: Sequence[str], device: str = "cpu") -> list[float]:
    """Probability of the clean class for each text under the classifier saved at `path`."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForSequenceClassification.from_pretrained(path).to(device).eval()
    except (OSError, ValueError) as exc:
        raise UdsInputError(f"cannot load the fluency classifier from {path!r}: {str(exc).splitlines()[0]}") from exc
    out: list[float] = []
    for rows in batches(len(texts), CLASSIFIER_BATCH):
        enc = tok([texts[i] for i in rows], return_tensors="pt", padding=True, truncation=True,
                  max_length=CLASSIFIER_MAX_TOKENS).to(device)
        out.extend(clean_class_prob(model(**enc).logits.float().cpu().numpy()).tolist())
    return out
