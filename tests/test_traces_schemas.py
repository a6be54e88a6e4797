"""Tool schemas inferred from observed calls, and declared schemas kept."""

from mcp_server.traces.schemas import ToolCatalog, clean_declared


def calls(*argument_dicts, name="bash"):
    return [{"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "id": str(i), "function": {"name": name, "arguments": a}}]}
        for i, a in enumerate(argument_dicts)]


def test_types_and_required_keys_come_from_the_calls():
    catalog = ToolCatalog()
    catalog.observe("pi", calls({"command": "ls", "timeout": 30}, {"command": "pwd"}, {"command": "x", "timeout": 1.5}))
    catalog.observe("pi", calls({"argv": ["ls", "-l"], "opts": {"a": 1}, "flag": True}, name="shell"))
    bash, shell = catalog.inferred("pi")
    params = bash["function"]["parameters"]
    assert params["properties"] == {"command": {"type": "string"}, "timeout": {"type": ["integer", "number"]}}
    assert params["required"] == ["command"] and bash["function"]["name"] == "bash"
    assert shell["function"]["parameters"]["properties"] == {
        "argv": {"type": "array", "items": {"type": "string"}}, "opts": {"type": "object"}, "flag": {"type": "boolean"}}
    assert catalog.inferred("codex") == []


def test_declared_tools_win_and_only_undeclared_called_tools_are_added():
    catalog = ToolCatalog()
    catalog.observe("openai:f", calls({"q": "x"}, name="search") + calls({"code": "1"}, name="python"))
    declared = [{"type": "function", "function": {"name": "search", "description": "Search.", "parameters": {
        "type": "object", "properties": {"q": {"type": "string", "description": "query"}}}}}, {"type": "code_interpreter"}]
    tools = catalog.tools_for("openai:f", declared, called={"search", "python"})
    assert [t["function"]["name"] for t in tools] == ["search", "python"]
    assert tools[0]["function"]["parameters"]["properties"]["q"]["description"] == "query"
    assert catalog.tools_for("openai:f", declared, called={"search"}) == clean_declared(declared)
    assert catalog.tools_for("openai:f", None, called=set(), synthesize=False) == []
