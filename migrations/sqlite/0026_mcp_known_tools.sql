-- The tools an OAuth-authorized MCP server last listed, kept with its grant: a send that finds the
-- grant dead (refused, revoked) still offers them, and calling one asks the user to authorize the
-- server again instead of the server silently dropping out. A JSON array; not a secret.
ALTER TABLE mcp_oauth_grants ADD COLUMN known_tools TEXT;

-- The OAuth client a user gives with one of their MCP servers, used before the operator's, the
-- gateway's metadata document or a registration: its id in clear, its secret sealed.
ALTER TABLE mcp_servers ADD COLUMN oauth_client_id TEXT;
ALTER TABLE mcp_servers ADD COLUMN oauth_client_secret TEXT;
