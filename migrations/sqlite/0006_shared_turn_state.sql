-- SQLite serves one instance, but keeps the same tables so both backends answer the same API.
-- State that several gateway instances on one database share, so that a thread runs one turn at a
-- time whichever instance took it, Stop and resuming reach the instance that runs it, a retry finds
-- its turn's budget and sources, and an OAuth callback may land on any instance.

-- A running turn. The primary key is what keeps a thread to one turn at a time: a second claim
-- conflicts instead of racing a check. The owner renews `lease_until` (epoch ms) while it runs; a
-- claim whose lease ran out belongs to an instance that died and may be taken over. The request
-- columns are read by the owner's heartbeat, so a request whose NOTIFY was lost still arrives.
CREATE TABLE turn_claims (
    user_id        TEXT NOT NULL,
    thread_id      TEXT NOT NULL,
    turn_id        TEXT NOT NULL UNIQUE,
    message_id     TEXT NOT NULL,
    instance_id    TEXT NOT NULL,
    lease_until    BIGINT NOT NULL,
    stop_requested BIGINT NOT NULL DEFAULT 0,
    -- A reader on another instance follows the turn: the owner copies its stream into turn_frames.
    follow_requested BIGINT NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL,
    PRIMARY KEY (user_id, thread_id)
);
CREATE INDEX turn_claims_by_instance ON turn_claims (instance_id);
CREATE INDEX turn_claims_by_lease ON turn_claims (lease_until);

-- What an automatic retry of an ended turn carries over (JSON), until `expires_at`.
CREATE TABLE turn_retry_states (
    turn_id    TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    thread_id  TEXT NOT NULL,
    state      TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX turn_retry_states_by_expiry ON turn_retry_states (expires_at);

-- A running turn's stream in batches of SSE frames, written by its owner only while a reader on
-- another instance follows it.
CREATE TABLE turn_frames (
    turn_id    TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    frames     TEXT NOT NULL,
    done       BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (turn_id, seq)
);
CREATE INDEX turn_frames_by_time ON turn_frames (created_at);

-- Integration authorizations between the authorize redirect and the provider's callback.
CREATE TABLE oauth_pending (
    state         TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL,
    provider      TEXT NOT NULL,
    code_verifier TEXT NOT NULL,
    expires_at    BIGINT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX oauth_pending_by_user ON oauth_pending (user_id, created_at);
CREATE INDEX oauth_pending_by_expiry ON oauth_pending (expires_at);

-- Start-up and the lease sweep look for answers left streaming; there are few at any time.
CREATE INDEX messages_streaming ON messages (user_id, thread_id, id) WHERE status = 'streaming';
