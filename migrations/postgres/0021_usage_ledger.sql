-- The usage ledger: one row per turn of a thread and per facade request, written with the answer's
-- final save (same transaction), so a retried save or a re-run turn never counts twice. Keyed by the
-- turn, whose id is fresh for every run. Costs are in the price table's currency and NULL where the
-- model has no price; the tokens count anyway.
CREATE TABLE usage_ledger (
    user_id            TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    turn_id            TEXT NOT NULL,
    key_id             TEXT,
    thread_id          TEXT,
    kind               TEXT NOT NULL,
    model              TEXT NOT NULL,
    provider           TEXT NOT NULL,
    input_tokens       BIGINT NOT NULL,
    output_tokens      BIGINT NOT NULL,
    cache_read_tokens  BIGINT NOT NULL,
    cache_write_tokens BIGINT NOT NULL,
    reasoning_tokens   BIGINT NOT NULL,
    tool_calls         BIGINT NOT NULL,
    web_calls          BIGINT NOT NULL,
    duration_ms        BIGINT NOT NULL,
    status             TEXT NOT NULL,
    cost               DOUBLE PRECISION,
    created_at         BIGINT NOT NULL,
    PRIMARY KEY (user_id, turn_id)
);
CREATE INDEX usage_ledger_time ON usage_ledger (created_at);
CREATE INDEX usage_ledger_user_time ON usage_ledger (user_id, created_at);

-- The models that answer in a model's place when its provider fails before the first token (a JSON
-- array of model ids, in order).
ALTER TABLE models ADD COLUMN fallbacks TEXT NOT NULL DEFAULT '[]';
