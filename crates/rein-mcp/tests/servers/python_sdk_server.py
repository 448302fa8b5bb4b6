"""An MCP server built with the official Python SDK (the `mcp` package,
FastMCP), over stdio: a typed tool with structured output, a read-only one,
one that fails, a resource and a prompt."""
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations

server = FastMCP("pysdk")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def shout(text: str) -> str:
    """The text in upper case."""
    return text.upper()


@server.tool()
def fail(reason: str) -> str:
    """Always fails, saying why."""
    raise ValueError(f"refused: {reason}")


@server.resource("note://greeting")
def greeting() -> str:
    """A short note."""
    return "The greeting is: hello from the note"


@server.prompt()
def review(path: str, focus: str = "bugs") -> str:
    """Ask for a review of one file."""
    return f"Review {path}, looking for {focus}."


if __name__ == "__main__":
    server.run()
