"""The seed papers' diagnostics (docs/diagnostics.md).

particles.py / clusters.py / simulate.py   tokens as particles on the sphere (``spikeport simulate``)
model_analysis.py / mixing.py / stats.py   token clustering, head correlation, attention locality
                                           (``spikeport analyze``); hf.py for Hugging Face models
ablation.py / opcount.py                   seed 000's ViT vs Spikformer ablation (``spikeport ablation``)
plots.py / model_plots.py / ablation_report.py / html.py / io.py   figures, pages, atomic writes
"""
