"""Drive `rein mcp serve` with the official Python MCP SDK as the client.

Usage: mcp_serve_client.py REIN WORKSPACE SCRIPT MODE
MODE `basic`: initialize, list the tools, call `rein` (with progress),
read `rein_result`, send bad arguments and an unknown tool. MODE `cancel`:
start a call, cancel it after a second, then make sure the server still
answers. Prints one JSON object with what it saw.
"""

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def main(rein, workspace, script, mode):
    params = StdioServerParameters(
        command=rein,
        args=["mcp", "serve", "-C", workspace, "--provider", "replay", "--script", script],
        env={k: v for k, v in __import__("os").environ.items()},
    )
    seen = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            seen["server"] = init.serverInfo.name
            tools = await session.list_tools()
            seen["tools"] = sorted(t.name for t in tools.tools)
            if mode == "basic":
                progress = []

                async def on_progress(p, total, message):
                    progress.append(message)

                result = await session.call_tool(
                    "rein", {"prompt": "go", "mode": "auto"}, progress_callback=on_progress
                )
                text = result.content[0].text
                seen["answer"] = text
                seen["is_error"] = result.isError
                seen["progress"] = progress
                session_id = text.rsplit("[session ", 1)[1].rstrip("]")
                got = await session.call_tool("rein_result", {"session_id": session_id})
                seen["result"] = json.loads(got.content[0].text)
                bad = await session.call_tool("rein", {"promptx": "go"})
                seen["bad"] = [bad.isError, bad.content[0].text]
                outside = await session.call_tool("rein", {"prompt": "go", "cwd": "../.."})
                seen["outside"] = [outside.isError, outside.content[0].text]
                try:
                    await session.call_tool("nope", {})
                    seen["unknown"] = "answered"
                except Exception as e:  # an MCP error
                    seen["unknown"] = str(e)
            else:
                request_id = session._request_id
                async with anyio.create_task_group() as tg:

                    async def call():
                        with anyio.move_on_after(20):
                            await session.call_tool("rein", {"prompt": "go", "mode": "auto"})

                    tg.start_soon(call)
                    await anyio.sleep(1)
                    await session.send_notification(
                        types.ClientNotification(
                            types.CancelledNotification(
                                params=types.CancelledNotificationParams(
                                    requestId=request_id, reason="test"
                                )
                            )
                        )
                    )
                    # Long enough for the command to finish, had it not
                    # been stopped; the server is still up.
                    await anyio.sleep(3)
                    tg.cancel_scope.cancel()
                again = await session.list_tools()
                seen["after_cancel"] = len(again.tools)
    print(json.dumps(seen))


anyio.run(main, *sys.argv[1:5])
