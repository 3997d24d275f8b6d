-- OAuth for users' MCP servers.
--
-- A pending authorization of an MCP server needs more than an integration's (the authorization
-- server found, the client registered there, the redirect URI): the service seals it into `details`.
-- Integrations leave it NULL.
ALTER TABLE oauth_pending ADD COLUMN details TEXT;

-- One grant per user and MCP server: the authorization server, the client identity and the tokens,
-- sealed together by the service. It goes with its server.
CREATE TABLE mcp_oauth_grants (
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    server_id  TEXT NOT NULL REFERENCES mcp_servers(id) ON DELETE CASCADE,
    sealed     TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, server_id)
);
CREATE INDEX mcp_oauth_grants_server ON mcp_oauth_grants (server_id);
