"""SemiAnalysisAI/InferenceX master configs (``configs/*-master.yaml``, ``configs/CONFIGS.md``),
imported entry by entry: an entry of another framework is skipped with a note; the first
search-space row is the base, the others variants; ``conc-list`` or ``conc-start``..``conc-end``
(step factor 2, CONFIGS.md) a bench concurrency grid; ``prefill``/``decode`` rows roles."""

from __future__ import annotations

import json
from typing import Any

from autobench.errors import RecipeError
from autobench.recipe.importer import _common as common
from autobench.recipe.importer._command import apply_flags, split_flags
from autobench.recipe.importer._source import MAX_GPUS_PER_NODE, Imported, Options, Src, shown

VLLM_FRAMEWORKS = {"vllm", "vllm-disagg", "dynamo-vllm", "llmd-vllm"}
ENTRY_KEYS = {
    "image": "",
    "model": "",
    "framework": "",
    "precision": "",
    "scenarios": "",
    "multinode": "",
    "disagg": "",
    "kv-p2p-transfer": "",
    "model-prefix": "informational",
    "runner": "a CI machine label",
    "router": "the framework's router (not vLLM)",
}
ROW_KEYS = {
    "spec-decoding",
    "tp",
    "pp",
    "ep",
    "dp-attn",
    "conc-list",
    "conc-start",
    "conc-end",
    "prefill",
    "decode",
}
MAX_CONCURRENCY = 1_000_000
MAX_LEVELS = 64


def _concurrency(src: Src, keys: tuple[Any, ...], row: dict[str, Any]) -> list[int] | None:
    if "conc-list" in row:
        items = src.need((*keys, "conc-list"), row["conc-list"], list)
        if not items or len(items) > MAX_LEVELS:
            raise src.fail((*keys, "conc-list"), f"conc-list: 1 to {MAX_LEVELS} levels", "shorten the list")
        return [src.count((*keys, "conc-list", i), c, "conc-list", MAX_CONCURRENCY) for i, c in enumerate(items)]
    if "conc-end" in row or "conc-start" in row:
        end = src.count((*keys, "conc-end"), row.get("conc-end", row.get("conc-start")), "conc-end", MAX_CONCURRENCY)
        start = src.count((*keys, "conc-start"), row.get("conc-start", end), "conc-start", MAX_CONCURRENCY)
        levels: list[int] = []
        c = start
        while c <= end and len(levels) < MAX_LEVELS:
            levels.append(c)
            c *= 2
        return levels
    return None


def _engine_words(src: Src, keys: tuple[Any, ...], row: dict[str, Any], out: Imported) -> list[str]:
    words: list[str] = []
    tp = src.count((*keys, "tp"), row["tp"], "tp", MAX_GPUS_PER_NODE) if "tp" in row else 1
    ep = src.count((*keys, "ep"), row["ep"], "ep", MAX_GPUS_PER_NODE) if "ep" in row else 1
    if row.get("dp-attn"):
        words += ["--data-parallel-size", str(tp), "--tensor-parallel-size", "1"]  # attention DP across the GPUs
    elif "tp" in row:
        words += ["--tensor-parallel-size", str(tp)]
    if "pp" in row:
        words += ["--pipeline-parallel-size", str(src.count((*keys, "pp"), row["pp"], "pp", MAX_GPUS_PER_NODE))]
    if ep > 1:
        words.append("--enable-expert-parallel")
    spec = row.get("spec-decoding")
    if isinstance(spec, str) and spec not in ("none", ""):
        words += ["--speculative-config", json.dumps({"method": spec}, separators=(",", ":"))]
        out.notes.append(
            f"{src.line(*keys, 'spec-decoding')}: spec-decoding {shown(spec)}: draft token count not stated"
        )
    for key in row:
        if key not in ROW_KEYS:
            out.notes.append(f"{src.line(*keys, key)}: not carried: {shown(key, 40)} {shown(row[key])}")
    return words


def convert(src: Src, options: Options) -> list[Imported]:
    results: list[Imported] = []
    skipped: list[str] = []
    for entry_name, entry in src.data.items():
        if not isinstance(entry, dict):
            raise src.fail(
                (entry_name,), f"{shown(entry_name, 40)}: an entry must be a mapping", "write image/model/..."
            )
        framework = str(entry.get("framework", ""))
        if framework not in VLLM_FRAMEWORKS:
            skipped.append(
                f"{src.line(entry_name)}: skipped: {entry_name} runs {shown(framework, 30) or '?'}, not vLLM"
            )
            continue
        try:
            results.append(_entry(src, str(entry_name), entry, options))
        except RecipeError as exc:
            if "no search-space row" not in exc.message:
                raise
            skipped.append(f"{src.line(entry_name)}: skipped: {exc.message}")
    if not results:
        raise src.fail(
            (), "no vLLM entry in this InferenceX config", "autobench runs vLLM; pick a file with vLLM entries"
        )
    results[0].notes[:0] = skipped
    return results


def _entry(src: Src, entry_name: str, entry: dict[str, Any], options: Options) -> Imported:
    repo = common.model_ref(entry.get("model"), src, (entry_name, "model"), options)
    name = common.name_of(entry_name)
    out = Imported(name, {}, src.path, "inferencex")
    image = options.image or src.get((entry_name, "image"), str) or common.DEFAULT_IMAGE
    recipe = common.base(repo, image, src, "inferencex")
    variants: dict[str, Any] = {}
    roles: dict[str, Any] = {}
    first = True
    scenarios = src.get((entry_name, "scenarios"), dict, {})
    for s_name, items in scenarios.items():
        items = src.typed((entry_name, "scenarios", s_name), items, list, [])
        for i, scenario in enumerate(items):
            skeys = (entry_name, "scenarios", s_name, i)
            scenario = src.need(skeys, scenario, dict)
            isl = src.count((*skeys, "isl"), scenario.get("isl", 1024), "isl", 10_000_000)
            osl = src.count((*skeys, "osl"), scenario.get("osl", 1024), "osl", 10_000_000)
            rows = src.typed((*skeys, "search-space"), scenario.get("search-space"), list, [])
            for j, row in enumerate(rows):
                rkeys = (*skeys, "search-space", j)
                row = src.need(rkeys, row, dict)
                spec = row.get("spec-decoding")
                if spec not in (None, "none", "", False):
                    out.notes.append(
                        f"{src.line(*rkeys, 'spec-decoding')}: skipped: row {j} (spec-decoding {shown(spec)}): its "
                        "draft and token count are in InferenceX's benchmark script, not in this config"
                    )
                    continue
                scratch: dict[str, Any] = {}
                apply_flags(scratch, split_flags(_engine_words(src, rkeys, row, out)), src, rkeys, out)
                over = {k: v for k, v in scratch.items() if k != "engine"}
                over["engine"] = {k: v for k, v in scratch.get("engine", {}).items() if k != "extra_args"}
                bench: dict[str, Any] = {
                    "dataset": {"kind": "random", "input_len": isl, "output_len": osl},
                    "max_tokens": osl,
                }
                levels = _concurrency(src, rkeys, row)
                if levels:
                    bench["concurrency"] = levels if len(levels) > 1 else levels[0]
                over["bench"] = bench
                if first and (isinstance(row.get("prefill"), dict) or isinstance(row.get("decode"), dict)):
                    roles = _roles(src, rkeys, row, entry, out)
                if first:
                    common_update(recipe, over)
                    first = False
                else:
                    tp = row.get(
                        "tp", (row.get("decode") or {}).get("tp") if isinstance(row.get("decode"), dict) else 1
                    )
                    label = common.variant_name(f"{s_name}-{isl}-{osl}-tp{tp}-ep{row.get('ep', 1)}-{j}")
                    variants[label] = over
    if first:
        raise src.fail(
            (entry_name, "scenarios"),
            f"{shown(entry_name, 40)}: no search-space row that this config describes whole",
            "import another entry",
        )
    if variants:
        recipe["variants"] = variants
    if roles:
        recipe["roles"] = roles
    if entry.get("multinode") and not roles:
        out.notes.append(
            f"{src.line(entry_name, 'multinode')}: not carried: multinode runner layout (srt-slurm config)"
        )
    common.account(src, out, ENTRY_KEYS, within=(entry_name,))
    recipe["meta"]["tags"] = ["inferencex"] + ([str(entry["precision"])] if entry.get("precision") else [])
    common.topology(recipe, src, out, nodes=1, gpus_per_node=None, executor=None, options=options, rule="InferenceX")
    common.bench(recipe)
    out.data = {"name": name, **recipe}
    return out


def _roles(
    src: Src, keys: tuple[Any, ...], row: dict[str, Any], entry: dict[str, Any], out: Imported
) -> dict[str, Any]:
    roles: dict[str, Any] = {}
    connector = "NixlConnector" if str(entry.get("kv-p2p-transfer", "nixl")).lower() == "nixl" else None
    for role in ("prefill", "decode"):
        part = row.get(role)
        if not isinstance(part, dict):
            continue
        scratch: dict[str, Any] = {}
        words = _engine_words(src, (*keys, role), {k: v for k, v in part.items() if k in ROW_KEYS}, out)
        if connector:
            kv = {"kv_connector": connector, "kv_role": "kv_producer" if role == "prefill" else "kv_consumer"}
            words += ["--kv-transfer-config", json.dumps(kv, separators=(",", ":"))]
        apply_flags(scratch, split_flags(words), src, (*keys, role), out)
        engine = scratch.get("engine", {})
        if "extra_args" in engine:
            engine["extra_args+"] = engine.pop("extra_args")
        roles[role] = {k: v for k, v in scratch.items() if v}
        for key in part:
            if key in ("num-worker", "additional-settings", "hardware"):
                out.notes.append(
                    f"{src.line(*keys, role, key)}: not carried: {role}.{key} (the multinode runner's layout)"
                )
    return roles


def common_update(base: dict[str, Any], over: dict[str, Any]) -> None:
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            common_update(base[k], v)
        else:
            base[k] = v
