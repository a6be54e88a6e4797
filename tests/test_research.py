"""Hub research through huggingface_hub against the loopback stand-in: the requests the client really sends
(paths, filters, sort, limit, expand; no token needed), the short results, errors, and the CLI."""

import json

import pytest

from support.common import run_cli

from mcp_server.research import ResearchError, paper, search_datasets, search_models, search_papers


def test_models_with_search_filters_and_sort(hub):
    result = search_models("qwen3", filters=["text-generation"], sort="likes", limit=5)
    assert [m.id for m in result.models] == ["Qwen/Qwen3-0.6B", "Qwen/Qwen3-1.7B"]
    top = result.models[0]
    assert (top.downloads, top.likes, top.pipeline_tag, top.library) == (912000, 610, "text-generation", "transformers")
    assert top.url == f"{hub.endpoint}/Qwen/Qwen3-0.6B" and top.created_at == "2025-04-27"
    (req,) = hub.requests("GET", "/api/models")
    assert req.query["search"] == ["qwen3"] and req.query["filter"] == ["text-generation"]
    assert req.query["sort"] == ["likes"] and req.query["limit"] == ["5"] and "downloads" in req.query["expand"]

    adapters = search_models(filters=["peft", "base_model:Qwen/Qwen3-0.6B"])
    assert [m.id for m in adapters.models] == ["alice/qwen3-0.6b-agent-lora"]
    assert [m.id for m in search_models(author="meta-llama").models] == ["meta-llama/Llama-3.2-1B"]
    assert search_models("no-such-model").models == [] and "loosen" in search_models("zzz").note


def test_datasets(hub):
    result = search_datasets(filters=["task_categories:text-generation", "size_categories:n<1K"],
                             sort="trending_score")
    assert [d.id for d in result.datasets] == ["bob/tool-calls-small", "openai/openai_humaneval"]
    assert result.datasets[1].url == f"{hub.endpoint}/datasets/openai/openai_humaneval"
    assert result.datasets[1].description.startswith("The HumanEval dataset")
    assert search_datasets("agent", limit=1).datasets[0].id == "alice/agent-traces"
    (first, _) = hub.requests("GET", "/api/datasets")
    assert first.query["filter"] == ["task_categories:text-generation", "size_categories:n<1K"]
    assert first.query["sort"] == ["trendingScore"]  # huggingface_hub's name for the Hub's sort key


def test_papers(hub):
    (hit,) = search_papers("qlora quantized").papers
    assert (hit.id, hit.published_at, hit.upvotes) == ("2305.14314", "2023-05-23", 58)
    assert hit.title.startswith("QLoRA") and hit.url == f"{hub.endpoint}/papers/2305.14314"
    assert hub.requests("GET", "/api/papers/search")[0].query == {"q": ["qlora quantized"], "limit": ["10"]}
    detail = paper("arxiv:2305.14314")
    assert detail.authors == ["Tim Dettmers", "Artidoro Pagnoni"] and detail.github_stars == 10500
    assert detail.linked_models == ["alice/qwen3-0.6b-agent-lora"] and detail.linked_datasets == ["alice/agent-traces"]
    assert "LoRA" in detail.keywords


def test_anonymous_access_works(hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setenv("HF_HOME", str(hub.state.prefix))  # no saved login either
    assert search_models("llama").models[0].id == "meta-llama/Llama-3.2-1B"
    assert "authorization" not in hub.requests("GET", "/api/models")[-1].headers


@pytest.mark.parametrize("call, needle", [
    (lambda: paper("2401.99999"), r"not found on the Hub \(404\)"),
    (lambda: paper("not-an-id"), "is not an arXiv id"),
    (lambda: search_papers("  "), "needs a query"),
    (lambda: search_models(limit=500), "out of range"),
])
def test_errors_say_what_to_do(hub, call, needle):
    with pytest.raises(ResearchError, match=needle) as info:
        call()
    assert info.value.fix


def test_unreachable_hub(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(ResearchError, match="could not be reached"):
        search_papers("lora")


def test_cli(hub):
    done = run_cli("research", "models", "--filter", "text-generation", "qwen3", "--sort", "likes", "--limit", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Qwen/Qwen3-0.6B  ↓912,000 ♥610")
    done = run_cli("research", "datasets", "agent", "--json")
    assert json.loads(done.stdout)["datasets"][0]["id"] == "alice/agent-traces"
    done = run_cli("research", "papers", "LoRA", "--limit", "5")
    assert "2106.09685" in done.stdout and "2305.14314" in done.stdout
    done = run_cli("research", "paper", "2305.14314")
    assert "Tim Dettmers" in done.stdout and "models: alice/qwen3-0.6b-agent-lora" in done.stdout
    done = run_cli("research", "paper", "1234")
    assert done.returncode == 1 and "is not an arXiv id" in done.stderr
