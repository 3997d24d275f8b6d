-- MCP header values and bearer tokens are stored sealed (AES-256-GCM, the OAuth tokens' key and
-- format). SQL cannot encrypt, so this only marks which rows are sealed; the gateway seals the rows
-- still at 0 when it starts with a key, and refuses to start without one once any row is at 1.
ALTER TABLE mcp_servers ADD COLUMN secrets_sealed BIGINT NOT NULL DEFAULT 0;
