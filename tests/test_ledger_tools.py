"""The ledger's MCP tools over stdio with the real MCP client: the loop, refusals as error results, the
plateau verdict in every answer, and the report."""

from test_server import ok, session, text


def test_propose_claim_record_list_report(tmp_path):
    async def flow(client):
        p = {"project": "mcp-study"}
        base = ok(await client.call_tool("ledger_propose", {**p, "hypothesis": "baseline", "variable": "baseline",
                                                            "value": "demo"}))
        assert base["experiment"]["status"] == "proposed" and "ledger_claim" in base["detail"]
        claimed = ok(await client.call_tool("ledger_claim", {**p, "worker": "w1"}))
        assert claimed["experiment"]["id"] == base["experiment"]["id"] and "preflight first" in claimed["detail"]
        empty = ok(await client.call_tool("ledger_claim", {**p, "worker": "w2"}))
        assert empty["experiment"] is None and "nothing to claim" in empty["detail"]
        kept = ok(await client.call_tool("ledger_record", {**p, "experiment_id": 1, "status": "keep",
                                                           "metric_name": "eval_loss", "metric_value": 2.0,
                                                           "job_id": "job-1"}))
        assert kept["plateau"]["best_id"] == 1 and not kept["plateau"]["should_stop"]
        lr = ok(await client.call_tool("ledger_propose", {**p, "hypothesis": "2x lr", "parent": 1, "value": 0.0004,
                                                          "variable": "training.learning_rate", "k": 1}))
        assert lr["experiment"]["value"] == "0.0004"
        await client.call_tool("ledger_claim", {**p, "worker": "w2"})
        dropped = ok(await client.call_tool("ledger_record", {**p, "experiment_id": 2, "status": "discard",
                                                              "metric_value": 2.3, "k": 1}))
        assert dropped["plateau"]["should_stop"] and "stop proposing" in dropped["plateau"]["reason"]
        repeat = await client.call_tool("ledger_propose", {**p, "hypothesis": "again", "parent": 1, "value": 0.0004,
                                                           "variable": "training.learning_rate"})
        assert repeat.is_error and "repeats experiment #2" in text(repeat) and "Fix:" in text(repeat)
        listed = ok(await client.call_tool("ledger_list", p))
        assert listed["counts"]["keep"] == 1 and listed["best"]["id"] == 1 and listed["metric"] == "eval_loss"
        assert listed["do_not_repeat"] == ["training.learning_rate = 0.0004 (#2, discard)"]
        report = ok(await client.call_tool("ledger_report", {**p, "path": str(tmp_path / "report.md")}))
        assert report["text"].startswith("# Experiments: mcp-study") and (tmp_path / "report.md").is_file()
        tsv = ok(await client.call_tool("ledger_report", {**p, "format": "tsv"}))
        assert tsv["text"].count("\n") == 3
        bad = await client.call_tool("ledger_record", {**p, "experiment_id": 9, "status": "keep"})
        assert bad.is_error and "no experiment #9" in text(bad)

    session(flow)
