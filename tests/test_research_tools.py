"""The research MCP tools over stdio against the Hub stand-in (HF_ENDPOINT reaches the server process)."""

from test_server import ok, session, text


def test_research_tools(hub):
    async def flow(client):
        models = ok(await client.call_tool("research_models", {"query": "qwen3", "filters": ["text-generation"],
                                                               "sort": "likes", "limit": 1}))
        assert [m["id"] for m in models["models"]] == ["Qwen/Qwen3-0.6B"] and models["endpoint"] == hub.endpoint
        data = ok(await client.call_tool("research_datasets", {"filters": ["format:parquet"], "sort": "downloads"}))
        assert [d["id"] for d in data["datasets"]] == ["openai/openai_humaneval", "alice/agent-traces"]
        papers = ok(await client.call_tool("research_papers", {"query": "low-rank"}))
        assert [p["id"] for p in papers["papers"]] == ["2106.09685"]
        one = ok(await client.call_tool("research_paper", {"arxiv_id": "2305.14314"}))
        assert one["linked_models"] == ["alice/qwen3-0.6b-agent-lora"] and one["authors"][0] == "Tim Dettmers"
        missing = await client.call_tool("research_paper", {"arxiv_id": "2401.99999"})
        assert missing.is_error and "404" in text(missing) and "Fix:" in text(missing)

    session(flow)
    assert {r.path for r in hub.requests("GET")} >= {"/api/models", "/api/datasets", "/api/papers/search",
                                                     "/api/papers/2305.14314"}
