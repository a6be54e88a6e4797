"""Hub search data and routes of the stand-in (models, datasets, papers; the shapes are in hub_service's doc)."""

from __future__ import annotations

MODELS = [
    {"_id": "m1", "id": "Qwen/Qwen3-0.6B", "author": "Qwen", "downloads": 912000, "likes": 610,
     "pipeline_tag": "text-generation", "library_name": "transformers", "trendingScore": 40,
     "tags": ["transformers", "safetensors", "qwen3", "text-generation", "license:apache-2.0"],
     "createdAt": "2025-04-27T03:40:08.000Z", "lastModified": "2025-07-26T03:46:27.000Z"},
    {"_id": "m2", "id": "Qwen/Qwen3-1.7B", "author": "Qwen", "downloads": 540000, "likes": 330,
     "pipeline_tag": "text-generation", "library_name": "transformers", "trendingScore": 25,
     "tags": ["transformers", "safetensors", "qwen3", "text-generation", "license:apache-2.0"],
     "createdAt": "2025-04-27T03:41:00.000Z", "lastModified": "2025-07-26T03:47:00.000Z"},
    {"_id": "m3", "id": "alice/qwen3-0.6b-agent-lora", "author": "alice", "downloads": 120, "likes": 3,
     "pipeline_tag": "text-generation", "library_name": "peft", "trendingScore": 1,
     "tags": ["peft", "safetensors", "lora", "base_model:Qwen/Qwen3-0.6B", "dataset:alice/agent-traces"],
     "createdAt": "2026-01-10T10:00:00.000Z", "lastModified": "2026-01-11T10:00:00.000Z"},
    {"_id": "m4", "id": "meta-llama/Llama-3.2-1B", "author": "meta-llama", "downloads": 1500000, "likes": 2000,
     "pipeline_tag": "text-generation", "library_name": "transformers", "trendingScore": 10,
     "tags": ["transformers", "safetensors", "llama", "text-generation", "license:llama3.2"],
     "createdAt": "2024-09-18T15:03:14.000Z", "lastModified": "2024-10-24T15:07:51.000Z"},
]
DATASETS = [
    {"_id": "d1", "id": "alice/agent-traces", "author": "alice", "downloads": 800, "likes": 12, "trendingScore": 2,
     "tags": ["task_categories:text-generation", "size_categories:1K<n<10K", "format:parquet", "language:en"],
     "description": "Coding-agent sessions with tool calls, converted to TRL messages rows.",
     "createdAt": "2026-01-05T09:00:00.000Z", "lastModified": "2026-01-06T09:00:00.000Z"},
    {"_id": "d2", "id": "openai/openai_humaneval", "author": "openai", "downloads": 90000, "likes": 300,
     "trendingScore": 5, "tags": ["task_categories:text-generation", "size_categories:n<1K", "format:parquet",
                                  "language:en", "license:mit"],
     "description": "The HumanEval dataset: 164 handwritten Python programming problems.",
     "createdAt": "2022-01-01T00:00:00.000Z", "lastModified": "2024-01-04T16:22:08.000Z"},
    {"_id": "d3", "id": "bob/tool-calls-small", "author": "bob", "downloads": 45, "likes": 40, "trendingScore": 9,
     "tags": ["task_categories:text-generation", "size_categories:n<1K", "format:json", "language:en"],
     "description": "Small tool-calling SFT set.", "createdAt": "2026-02-01T00:00:00.000Z",
     "lastModified": "2026-02-02T00:00:00.000Z"},
]
PAPERS = [
    {"id": "2305.14314", "title": "QLoRA: Efficient Finetuning of Quantized LLMs",
     "summary": "We present QLoRA, an efficient finetuning approach that reduces memory usage enough to finetune a "
                "65B parameter model on a single 48GB GPU while preserving full 16-bit finetuning task performance.",
     "publishedAt": "2023-05-23T17:50:33.000Z", "upvotes": 58, "discussionId": "p1",
     "authors": [{"_id": "a1", "name": "Tim Dettmers", "hidden": False},
                 {"_id": "a2", "name": "Artidoro Pagnoni", "hidden": False}],
     "ai_summary": "4-bit NormalFloat quantisation plus LoRA adapters match 16-bit finetuning.",
     "ai_keywords": ["QLoRA", "4-bit NormalFloat", "LoRA", "paged optimizers"],
     "githubRepo": "https://github.com/artidoro/qlora", "githubStars": 10500, "projectPage": None,
     "linkedModels": [{"id": "alice/qwen3-0.6b-agent-lora"}], "numTotalModels": 1,
     "linkedDatasets": [{"id": "alice/agent-traces"}], "numTotalDatasets": 1},
    {"id": "2106.09685", "title": "LoRA: Low-Rank Adaptation of Large Language Models",
     "summary": "We propose Low-Rank Adaptation, or LoRA, which freezes the pre-trained model weights and injects "
                "trainable rank decomposition matrices into each layer of the Transformer architecture.",
     "publishedAt": "2021-06-17T17:37:18.000Z", "upvotes": 40, "discussionId": "p2",
     "authors": [{"_id": "a3", "name": "Edward J. Hu", "hidden": False}],
     "ai_summary": "Low-rank update matrices adapt large models with few trainable parameters.",
     "ai_keywords": ["LoRA", "low-rank adaptation"], "githubRepo": "https://github.com/microsoft/LoRA",
     "githubStars": 11000, "projectPage": None, "linkedModels": [], "numTotalModels": 0, "linkedDatasets": [],
     "numTotalDatasets": 0},
]
SEARCH_PARAMS = {
    "/api/models": {"search", "author", "filter", "pipeline_tag", "sort", "limit", "expand", "full", "config",
                    "cardData", "gated", "apps", "inference", "inference_provider", "num_parameters"},
    "/api/datasets": {"search", "author", "filter", "sort", "limit", "expand", "full", "gated"},
    "/api/papers/search": {"q", "limit"},
}
SORT_KEYS = {"downloads", "likes", "trendingScore", "createdAt", "lastModified"}



class SearchRoutes:
    """Handler methods for the public search endpoints (mixed into the stand-in request handler)."""

    def _search(self, req) -> None:
        """Hub search: models / datasets listings, paper search and one paper (shapes in the module doc)."""
        path, q, s = req.path, req.query, self.state
        if path not in SEARCH_PARAMS:  # /api/papers/{id}
            if q:
                return self._error(400, f"unexpected query parameters {sorted(q)}")
            found = next((p for p in s.papers if p["id"] == path.rsplit("/", 1)[1]), None)
            return self._send(200, found) if found else self._error(404, "Paper not found")
        unknown = set(q) - SEARCH_PARAMS[path]
        if unknown:
            return self._error(400, f"unknown query parameters {sorted(unknown)}")
        limit = int(q.get("limit", ["1000"])[0])
        if path == "/api/papers/search":
            words = q.get("q", [""])[0].lower().split()
            hits = [p for p in s.papers if all(w in (p["title"] + " " + p["summary"]).lower() for w in words)]
            inner = ("id", "authors", "publishedAt", "title", "summary", "upvotes", "discussionId", "ai_summary",
                     "ai_keywords", "githubRepo", "githubStars")
            return self._send(200, [{"paper": {k: p[k] for k in inner}, "publishedAt": p["publishedAt"],
                                     "title": p["title"], "summary": p["summary"], "numComments": 0,
                                     "thumbnail": f"{self.endpoint}/thumbnails/{p['id']}.png"} for p in hits][:limit])
        items = s.models if path == "/api/models" else s.datasets
        for needle in q.get("search", []):
            items = [i for i in items if needle.lower() in i["id"].lower()]
        if "author" in q:
            items = [i for i in items if i["author"] == q["author"][0]]
        if "pipeline_tag" in q:
            items = [i for i in items if i.get("pipeline_tag") == q["pipeline_tag"][0]]
        for tag in q.get("filter", []):
            items = [i for i in items if tag in i["tags"] or tag == i.get("library_name")]
        if "sort" in q:
            key = q["sort"][0]
            if key not in SORT_KEYS:
                return self._error(400, f"cannot sort by {key}")
            items = sorted(items, key=lambda i: i[key], reverse=True)
        keep = set(q.get("expand", [])) or {"downloads", "likes", "tags", "createdAt", "trendingScore", "private",
                                            "pipeline_tag", "library_name"}
        rows = [{k: v for k, v in i.items() if k in keep or k in ("_id", "id")} for i in items[:limit]]
        return self._send(200, rows)

