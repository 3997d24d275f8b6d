"""An OAuth-protected MCP server built on the Python SDK's auth support, for the promptgate-mcp tests.

One process is both the authorization server (the SDK's `create_auth_routes`: metadata, /authorize,
/token, /register, /revoke) and the resource server (`/mcp`, which answers 401 with
`WWW-Authenticate: Bearer resource_metadata=...` and serves RFC 9728 metadata). Consent is given at
once: /authorize redirects straight back with a code, as a user clicking "Allow" would.

Usage: python py_auth_peer.py PORT [ACCESS_TOKEN_SECONDS] [--no-registration]

With --no-registration the authorization server offers no client registration (nor does the SDK
offer Client ID Metadata Documents): only a client registered beforehand, through the test hook
POST /test/clients, can be authorized.

Test hooks (not part of any spec): POST /test/revoke-access-tokens forgets every access token
issued so far, as an authorization server does when a user revokes a grant; POST
/test/revoke-grants forgets every access and refresh token, so renewing fails too (`invalid_grant`)
and only a new authorization helps, as when a user removes the app's access; POST
/test/revoke-grants-on-next-call does that the moment the next `tools/call` arrives, after the
tools were listed, so a gateway meets it in the middle of a turn; GET /test/stats
reports how many codes, refreshes and registrations the server handled; POST /test/clients
registers a client by hand ({client_id, client_secret, redirect_uri, token_endpoint_auth_method}),
as an operator does in an authorization server's console.

The tool `write_note` needs the scope `notes:write` beyond `notes`: called with a token without it,
it answers `403` with `WWW-Authenticate: Bearer error="insufficient_scope", scope="notes
notes:write"`, as the MCP spec's step-up has it.
"""

import asyncio
import json
import secrets
import sys
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse

PORT = int(sys.argv[1])
ACCESS_SECONDS = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 3600
REGISTRATION = "--no-registration" not in sys.argv
BASE = f"http://127.0.0.1:{PORT}"
RESOURCE = f"{BASE}/mcp"
SCOPE = "notes"
WRITE_SCOPE = "notes:write"


class AutoConsentProvider:
    """Keeps clients, codes and tokens in memory and approves every authorization request."""

    def __init__(self):
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats = {"codes": 0, "refreshes": 0, "registrations": 0}

    async def get_client(self, client_id: str):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        self.stats["registrations"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "authorization code already used")
        self.stats["codes"] += 1
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token: str):
        token = self.refresh.get(refresh_token)
        return token if token and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        # Refresh tokens rotate, as the spec asks of an authorization server with public clients.
        self.refresh.pop(refresh_token.token, None)
        self.stats["refreshes"] += 1
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str):
        access = self.access.get(token)
        if access and access.expires_at and access.expires_at < time.time():
            return None
        return access

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        expires = int(time.time()) + ACCESS_SECONDS
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=ACCESS_SECONDS,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )


provider = AutoConsentProvider()
server = MCPServer(
    "promptgate-py-auth-peer",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=BASE,
        resource_server_url=RESOURCE,
        required_scopes=[SCOPE],
        # A token issued for another resource (RFC 8707) is refused.
        validate_token_resource=True,
        client_registration_options=ClientRegistrationOptions(
            enabled=REGISTRATION, valid_scopes=[SCOPE, WRITE_SCOPE], default_scopes=[SCOPE]
        ),
        revocation_options=RevocationOptions(enabled=True),
    ),
)


@server.tool()
def whoami() -> str:
    """Say which server answered."""
    return "py-auth-peer"


@server.tool()
def write_note(text: str) -> str:
    """Keep a note (needs the notes:write scope)."""
    return f"noted: {text}"


@server.custom_route("/test/revoke-access-tokens", methods=["POST"])
async def revoke_access_tokens(_request: Request):
    provider.access.clear()
    return JSONResponse({"revoked": True})


@server.custom_route("/test/revoke-grants", methods=["POST"])
async def revoke_grants(_request: Request):
    provider.access.clear()
    provider.refresh.clear()
    return JSONResponse({"revoked": True})


hooks = {"revoke_on_next_call": False}


@server.custom_route("/test/revoke-grants-on-next-call", methods=["POST"])
async def revoke_grants_on_next_call(_request: Request):
    hooks["revoke_on_next_call"] = True
    return JSONResponse({"armed": True})


@server.custom_route("/test/clients", methods=["POST"])
async def add_client(request: Request):
    body = await request.json()
    client = OAuthClientInformationFull(
        client_id=body["client_id"],
        client_secret=body.get("client_secret"),
        redirect_uris=[body["redirect_uri"]],
        token_endpoint_auth_method=body.get("token_endpoint_auth_method", "client_secret_post"),
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=f"{SCOPE} {WRITE_SCOPE}",
    )
    provider.clients[client.client_id] = client
    return JSONResponse({"added": client.client_id})


@server.custom_route("/test/stats", methods=["GET"])
async def stats(_request: Request):
    return JSONResponse(provider.stats)


def called_tool(body: bytes) -> str | None:
    """The tool a JSON-RPC `tools/call` body calls, if it is one."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if isinstance(message, dict) and message.get("method") == "tools/call":
        return (message.get("params") or {}).get("name")
    return None


def token_scopes(scope) -> list[str]:
    for name, value in scope.get("headers", []):
        if name == b"authorization" and value.lower().startswith(b"bearer "):
            access = provider.access.get(value[7:].decode())
            return access.scopes if access else []
    return []


class CallHooks:
    """Sees each MCP request before the SDK does: arms the revocation hook on the next tool call,
    and answers a call to `write_note` without `notes:write` with the step-up challenge."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != "/mcp" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        tool = called_tool(body)
        if tool and hooks["revoke_on_next_call"]:
            hooks["revoke_on_next_call"] = False
            provider.access.clear()
            provider.refresh.clear()
        scopes = token_scopes(scope)
        if tool == "write_note" and scopes and WRITE_SCOPE not in scopes:
            challenge = (
                f'Bearer error="insufficient_scope", scope="{SCOPE} {WRITE_SCOPE}", '
                f'resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"'
            )
            await send({"type": "http.response.start", "status": 403,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"www-authenticate", challenge.encode())]})
            await send({"type": "http.response.body", "body": b'{"error": "insufficient_scope"}'})
            return
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def main():
    import uvicorn

    app = CallHooks(server.streamable_http_app(host="127.0.0.1"))
    await uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning")).serve()


if __name__ == "__main__":
    asyncio.run(main())
