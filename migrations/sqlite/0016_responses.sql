-- Responses kept for the OpenAI Responses API (`store: true`): what `GET /v1/responses/{id}` returns,
-- the request's input items, and the conversation the model saw up to and including this response,
-- which a later request continues from with `previous_response_id`. Each row carries its whole
-- conversation, so deleting one response never breaks another's chain. Rows older than the
-- deployment's retention are deleted as the user stores new ones.
CREATE TABLE responses (
    user_id              TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    id                   TEXT NOT NULL,
    previous_response_id TEXT,
    body                 TEXT NOT NULL,
    input_items          TEXT NOT NULL,
    conversation         TEXT NOT NULL,
    created_at           BIGINT NOT NULL,
    PRIMARY KEY (user_id, id)
);
CREATE INDEX responses_by_age ON responses (user_id, created_at);
