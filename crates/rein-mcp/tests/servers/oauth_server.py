"""An MCP server over streamable HTTP behind OAuth, built with the official
Python SDK: the SDK's own authorization server (metadata discovery, dynamic
client registration, PKCE, refresh tokens) on 127.0.0.1, with a provider
that approves every request at once (no login page) and issues access
tokens that live only a few seconds.

    python3 oauth_server.py PORT LOG [--refuse] [--token-secs N] [--open --stateless]
                            [--slow-get SECS]

Each grant the token endpoint gives is appended to LOG ("code" or
"refresh"), so a test can see that rein refreshed an expired token.
`--refuse` makes the authorization endpoint answer access_denied.
`--open --stateless` serves the same tool with no OAuth and no sessions
(no `Mcp-Session-Id`: every request stands alone).
`--slow-get SECS` answers each GET of /mcp (the standalone stream) that
late, as a loaded server or proxy would; the `ask_aside` tool asks its
question on that stream (tied to no request of the client's), as the
conformance suite's elicitation scenario does.
"""
import secrets
import sys
import time
from datetime import timedelta

import anyio
import uvicorn

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizeError,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.fastmcp import Context, FastMCP
from mcp.shared.auth import OAuthToken
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    ServerRequest,
    ToolAnnotations,
)

PORT = int(sys.argv[1])
LOG = sys.argv[2]
REFUSE = "--refuse" in sys.argv
TOKEN_SECS = int(sys.argv[sys.argv.index("--token-secs") + 1]) if "--token-secs" in sys.argv else 3
SLOW_GET = float(sys.argv[sys.argv.index("--slow-get") + 1]) if "--slow-get" in sys.argv else 0
BASE = f"http://127.0.0.1:{PORT}"


def logged(what):
    with open(LOG, "a") as f:
        f.write(what + "\n")


class Provider:
    """Approves at once; tokens are random strings kept in memory."""

    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params):
        if REFUSE:
            raise AuthorizeError("access_denied", "the test server refuses everyone")
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, code):
        return self.codes.get(code)

    def _issue(self, client_id, scopes, resource):
        access = secrets.token_urlsafe(16)
        refresh = secrets.token_urlsafe(16)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + TOKEN_SECS,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=TOKEN_SECS,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        logged("code")
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        self.refresh.pop(refresh_token.token, None)
        logged("refresh")
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(getattr(token, "token", ""), None)


secured = {} if "--open" in sys.argv else dict(
    auth_server_provider=Provider(),
    auth=AuthSettings(
        issuer_url=BASE,
        resource_server_url=f"{BASE}/mcp",
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]
        ),
        required_scopes=["mcp"],
        validate_token_resource=False,
    ),
)
server = FastMCP(
    "oauth-test",
    host="127.0.0.1",
    port=PORT,
    stateless_http="--stateless" in sys.argv,
    **secured,
)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def secret_word() -> str:
    """The word only signed-in clients may read."""
    return "swordfish"


@server.tool()
async def ask_aside(ctx: Context) -> str:
    """Asks the user a question on the standalone stream, and says the answer."""
    asked = ElicitRequest(
        params=ElicitRequestFormParams(
            message="Which colour?",
            requestedSchema={"type": "object", "properties": {"colour": {"type": "string"}}},
        )
    )
    # No related request: the SDK sends it on the GET stream, or drops it
    # when that stream is not open (then this times out).
    answer = await ctx.session.send_request(
        ServerRequest(asked), ElicitResult, request_read_timeout_seconds=timedelta(seconds=20)
    )
    return f"the user's answer: {answer.action}"


app = server.streamable_http_app()


async def slow_gets(scope, receive, send):
    if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == "/mcp":
        await anyio.sleep(SLOW_GET)
    await app(scope, receive, send)


if "--handed-socket" in sys.argv:
    # The test opened the listening socket and passed it as descriptor 3.
    import socket

    uvicorn.Server(uvicorn.Config(slow_gets, log_level="warning")).run(
        sockets=[socket.socket(fileno=3)]
    )
else:
    uvicorn.run(slow_gets, host="127.0.0.1", port=PORT, log_level="warning")
