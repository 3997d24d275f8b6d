-- Keys and users as an API, and budgets. A user has a role ('user' or 'admin') and may be disabled;
-- a key (a row of api_tokens) gets a public id, a name, an expiry and a last-used time. Keys issued
-- before this version get an id derived from their hash and no name.
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'user';
ALTER TABLE users ADD COLUMN disabled_at BIGINT;

ALTER TABLE api_tokens ADD COLUMN id TEXT;
ALTER TABLE api_tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE api_tokens ADD COLUMN expires_at BIGINT;
ALTER TABLE api_tokens ADD COLUMN last_used_at BIGINT;
UPDATE api_tokens SET id = 'key_' || substr(token_hash, 1, 24) WHERE id IS NULL;
CREATE UNIQUE INDEX api_tokens_id ON api_tokens (id);

-- The limits an admin set on a user (scope 'user') or on one of its keys (scope 'key'); a NULL
-- limit is off.
CREATE TABLE budgets (
    scope             TEXT NOT NULL,
    subject_id        TEXT NOT NULL,
    user_id           TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    period_tokens     BIGINT,
    period_secs       BIGINT,
    tokens_per_minute BIGINT,
    updated_at        BIGINT NOT NULL,
    PRIMARY KEY (scope, subject_id)
);
CREATE INDEX budgets_user ON budgets (user_id);

-- Tokens spent per limited subject and window: 'period' windows start at multiples of the
-- budget's period since the epoch, 'minute' windows at whole minutes.
CREATE TABLE budget_spend (
    scope        TEXT NOT NULL,
    subject_id   TEXT NOT NULL,
    span         TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    tokens       BIGINT NOT NULL,
    PRIMARY KEY (scope, subject_id, span, window_start)
);
CREATE INDEX budget_spend_user ON budget_spend (user_id);
