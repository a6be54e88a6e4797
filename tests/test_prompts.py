"""The chat commands as MCP prompts: listed by any MCP client, rendered with the user's arguments, and the
same text the OpenCode and Claude Code commands carry."""

import pytest

from support.common import REPO
from test_server import session

from mcp_server.harness import COMMANDS


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_prompts_are_listed_and_rendered(mode):
    async def flow(client):
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        contract = await client.get_prompt("tunepack-contract", {"model": "Qwen/Qwen3-0.6B",
                                                                 "dataset": "alice/agent-traces"})
        train = await client.get_prompt("tunepack-train", {"request": "tiny:qwen3 on examples/data"})
        return listed, contract, train

    listed, contract, train = session(flow, mode=mode)
    assert set(listed) == {c.name for c in COMMANDS}
    assert [(a.name, a.required) for a in listed["tunepack-contract"].arguments] == \
        [("model", True), ("dataset", True), ("notes", False)]
    assert all(p.description for p in listed.values())
    text = contract.messages[0].content.text
    assert text.startswith("SFT the model Qwen/Qwen3-0.6B on the dataset alice/agent-traces, sweep on several jobs, "
                           "track every run, push every adapter,\nevaluate, and add the scores to the README.")
    assert "`tunepack-sweeps`" in text and "results_readme" in text and "$1" not in text
    body = train.messages[0].content.text
    assert body.startswith("Fine-tune with tunepack: tiny:qwen3 on examples/data") and "`tunepack-pipeline`" in body
    # the OpenCode / Claude Code command files carry the same text, with $ARGUMENTS left for the harness
    assert body.replace("tiny:qwen3 on examples/data", "$ARGUMENTS") in \
        (REPO / ".claude" / "commands" / "tunepack-train.md").read_text()
