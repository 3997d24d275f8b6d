-- The steps of a facade turn that its client never saw (server tool calls made before or beside a
-- call of one of the client's own tools), kept for the client's next request, which may reach any
-- instance. `body` is the hand-off as JSON; rows go once `expires_at` (epoch ms) has passed.
CREATE TABLE client_handoffs (
    user_id     TEXT NOT NULL,
    handoff_key TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, handoff_key)
);
CREATE INDEX client_handoffs_by_user ON client_handoffs (user_id, created_at);
CREATE INDEX client_handoffs_by_expiry ON client_handoffs (expires_at);
