"""Run under vLLM's own environment (tests/support/vllm_env.py): the eval kit's vLLM backend on CPU.

    python vllm_agree.py JOB.json OUT.json

JOB: {"base", "adapter", "merged", "prompts": [[messages, tools], ...], "references": [[prompt ids, completion ids]],
"new_tokens"}. For each variant — base, base + adapter (vLLM's LoRA, one engine for both, as the kit loads it) and
the merged export (an engine of its own) — writes: the kit's answers (Generator.complete: chat template, greedy,
stop tokens), the first ``new_tokens`` greedy token ids of each prompt's template ids with the top-2 log-probs at
each step (eos ignored, so every prompt gives the same count), and for the merged model the teacher-forced log-prob
of each reference completion token (vLLM 0.32 on CPU cannot return prompt log-probs from an engine with LoRA
enabled: punica_cpu's add_lora_logits fails on the prompt's positions). The test compares all of it with transformers in the project's environment.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_variant(gen, job: dict, out: dict, label: str, forced: bool = True) -> None:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.lora.request import LoRARequest

    prompts = [(m, t) for m, t in job["prompts"]]
    out[label] = {"kit": gen.complete(prompts, job["new_tokens"])}
    adapter = gen.model.get("adapter")
    lora = LoRARequest("adapter", 1, adapter) if adapter else None
    ids = [gen.tokenizer(gen.prompt(m, t), add_special_tokens=False)["input_ids"] for m, t in prompts]
    greedy = SamplingParams(temperature=0.0, max_tokens=job["new_tokens"], ignore_eos=True, logprobs=2)
    done = gen.engine.generate([TokensPrompt(prompt_token_ids=i) for i in ids], greedy, lora_request=lora,
                               use_tqdm=False)
    out[label]["prompt_ids"] = ids
    out[label]["tokens"] = [list(d.outputs[0].token_ids) for d in done]
    out[label]["top2"] = [[sorted((lp.logprob for lp in step.values()), reverse=True)[:2]
                           for step in d.outputs[0].logprobs] for d in done]
    if not forced:  # vLLM 0.32 on CPU: prompt log-probs from a LoRA-enabled engine fail in punica_cpu's logits
        return
    teacher = SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=0)
    full = [p + c for p, c in job["references"]]
    scored = gen.engine.generate([TokensPrompt(prompt_token_ids=i) for i in full], teacher, lora_request=lora,
                                 use_tqdm=False)
    out[label]["forced"] = [[d.prompt_logprobs[len(p) + k][tok].logprob for k, tok in enumerate(c)]
                            for d, (p, c) in zip(scored, job["references"], strict=True)]


def main() -> None:
    sys.path.insert(0, str(REPO))
    from mcp_server.evals.kit.generate import Generator, load_generator

    job = json.loads(Path(sys.argv[1]).read_text())
    out: dict = {}
    with_adapter = load_generator({"label": "adapter", "base": job["base"], "adapter": job["adapter"]}, "vllm")
    assert with_adapter.backend == "vllm"
    base = Generator({"label": "base", "base": job["base"]}, with_adapter.tokenizer, with_adapter.engine, "vllm")
    run_variant(base, job, out, "base", forced=False)
    run_variant(with_adapter, job, out, "adapter", forced=False)
    del with_adapter, base
    merged = load_generator({"label": "merged", "base": job["merged"]}, "vllm")
    run_variant(merged, job, out, "merged")
    import vllm

    out["vllm"] = vllm.__version__
    Path(sys.argv[2]).write_text(json.dumps(out))


if __name__ == "__main__":  # vLLM starts its engine in a spawned process
    main()
