"""The published meta-evaluation table: spec §5.7 ("Published results"), typed once here.

Pure data, one row per metric key: faithfulness (P/N AUC), the raw P and N pool means, Q, R,
robustness = HM(Q, R) and overall = HM(faithfulness, robustness), as spec §5.7 prints them (3 or 4
decimals). Whatever shows or compares the published numbers reads them from here.
"""

from __future__ import annotations

FIELDS = ("faithfulness", "p_mean", "n_mean", "q", "r", "robustness", "overall")

# spec §5.7, in its row order: key -> (Faith AUC, P mean, N mean, Q, R, Rob = HM(Q,R), Overall)
_TABLE: dict[str, tuple[float, float, float, float, float, float, float]] = {
    "es": (0.891, 0.287, 0.067, 0.9700, 0.7703, 0.8587, 0.875),
    "em": (0.817, 0.742, 0.620, 0.9843, 0.6051, 0.7495, 0.782),
    "prob": (0.816, 0.393, 0.142, 0.9238, 0.6417, 0.7573, 0.786),
    "paraprob": (0.707, 0.081, 0.055, 0.8529, 0.8988, 0.8752, 0.782),
    "truth_ratio": (0.947, 0.650, 0.568, 0.9960, 0.2343, 0.3794, 0.542),
    "rouge": (0.722, 0.548, 0.431, 0.9342, 0.2025, 0.3329, 0.456),
    "para_rouge": (0.832, 0.339, 0.286, 0.9507, 0.0637, 0.1194, 0.209),
    "jailbreak_rouge": (0.757, 0.490, 0.397, 0.9713, 0.1831, 0.3081, 0.438),
    "mia_loss": (0.902, 0.714, 0.448, 0.9348, 0.5192, 0.6676, 0.767),
    "mia_zlib": (0.867, 0.658, 0.374, 0.9382, 0.4874, 0.6415, 0.737),
    "mia_min_k": (0.907, 0.716, 0.442, 0.9231, 0.5322, 0.6752, 0.774),
    "mia_min_kpp": (0.816, 0.685, 0.502, 0.8826, 0.4308, 0.5790, 0.677),
    "s_mia_loss": (0.891, 0.299, 0.810, 0.7194, 0.6635, 0.6903, 0.778),
    "s_mia_zlib": (0.870, 0.210, 0.741, 0.7036, 0.7450, 0.7237, 0.790),
    "s_mia_min_k": (0.891, 0.281, 0.810, 0.7104, 0.6974, 0.7038, 0.786),
    "s_mia_min_kpp": (0.799, 0.558, 0.866, 0.6427, 0.5655, 0.6016, 0.686),
    "cka": (0.648, 0.037, 0.109, 0.9968, 0.0134, 0.0264, 0.051),
    "fisher_masked_0.001": (0.712, 0.513, 0.753, 0.5825, 0.9460, 0.7210, 0.716),
    "fisher_masked_0.0001": (0.708, 0.516, 0.756, 0.5732, 0.9450, 0.7136, 0.711),
    "fisher_masked_0.01": (0.698, 0.511, 0.753, 0.5819, 0.9399, 0.7188, 0.708),
    "logit_lens": (0.927, 0.475, 0.794, 0.9587, 0.8116, 0.8791, 0.902),
    "uds": (0.971, 0.486, 0.852, 0.9677, 0.8997, 0.9325, 0.951),
}

PUBLISHED: dict[str, dict[str, float]] = {k: dict(zip(FIELDS, v)) for k, v in _TABLE.items()}
SOURCE = "spec §5.7"
