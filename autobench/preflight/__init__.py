"""Preflight: predict vLLM's KV-cache layout, and the boots that will fail, from configs alone.

    geometry.py   config.json -> layer kinds (full / sliding / Gated DeltaNet / Mamba2) and sizes
    versions.py   vLLM's layout rules as data, per version range, each citing its source
    layout.py     page sizes, attention block size, mamba padding, unification verdict, groups
    budget.py     the KV budget: GPU memory -> blocks -> concurrency, with its uncertainty
    inputs.py     recipe -> configs at the pinned revisions, serve options, vLLM version, weights
    predict.py    one Prediction (text and JSON) for a recipe
    findings.py   the prediction as validate findings (AB070 predicted failure, AB071 cannot predict)
    compare.py    a stored prediction against the boot facts a log printed (preflight-report)

Nothing here starts a process or loads weights: a prediction is arithmetic over config.json files.
"""
