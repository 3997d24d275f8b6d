-- Every table carries user_id and every query filters by it. Times are epoch milliseconds (BIGINT),
-- flags are BIGINT 0/1 and JSON is TEXT, so the same statements run on SQLite through sqlx's Any driver.

CREATE TABLE users (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_tokens (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL
);
CREATE INDEX api_tokens_user ON api_tokens (user_id);

CREATE TABLE user_settings (
    user_id    TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    data       TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE integrations (
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    provider      TEXT NOT NULL,
    connected     BIGINT NOT NULL DEFAULT 0,
    enabled       BIGINT NOT NULL DEFAULT 0,
    sealed_secret TEXT,
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (user_id, provider)
);

-- System models live under the reserved owner '~system' (not a valid user id) and are visible to all.
CREATE TABLE models (
    owner                        TEXT NOT NULL,
    id                           TEXT NOT NULL,
    name                         TEXT NOT NULL,
    provider                     TEXT NOT NULL,
    upstream_model               TEXT NOT NULL,
    tool_usage                   BIGINT NOT NULL,
    engine                       TEXT NOT NULL,
    context_window               BIGINT,
    supports_images              BIGINT NOT NULL,
    supports_parallel_tool_calls BIGINT NOT NULL,
    extract_think_tags           BIGINT NOT NULL,
    start_with_reasoning         BIGINT NOT NULL,
    reasoning                    TEXT,
    profile                      TEXT NOT NULL,
    created_at                   BIGINT NOT NULL,
    updated_at                   BIGINT NOT NULL,
    PRIMARY KEY (owner, id)
);
CREATE INDEX models_id ON models (id);

CREATE TABLE projects (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    instructions TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX projects_user ON projects (user_id, created_at);

-- Clients may choose thread ids, so they are unique per user only. `title_terms` (and a message's
-- `search_terms`) is the text as the store's search sees it: lower-cased words separated by single
-- spaces, computed by the application so both databases tokenise the same words regardless of
-- their locale.
CREATE TABLE threads (
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    id          TEXT NOT NULL,
    project_id  TEXT REFERENCES projects(id) ON DELETE SET NULL,
    title       TEXT,
    title_terms TEXT NOT NULL DEFAULT '',
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, id)
);
CREATE INDEX threads_recent ON threads (user_id, updated_at DESC);
CREATE INDEX threads_project ON threads (project_id);

CREATE TABLE messages (
    pk           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      TEXT NOT NULL,
    id           TEXT NOT NULL,
    thread_id    TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    role         TEXT NOT NULL,
    parts        TEXT NOT NULL,
    metadata     TEXT NOT NULL,
    status       TEXT,
    search_text  TEXT NOT NULL,
    search_terms TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    UNIQUE (user_id, id),
    UNIQUE (user_id, thread_id, seq),
    FOREIGN KEY (user_id, thread_id) REFERENCES threads(user_id, id) ON DELETE CASCADE
);

-- A new message is activity on its thread: bump the thread in the same statement instead of a second
-- round trip on the send path.
CREATE TRIGGER messages_touch_thread AFTER INSERT ON messages BEGIN
    UPDATE threads SET updated_at = MAX(updated_at, new.created_at)
    WHERE user_id = new.user_id AND id = new.thread_id;
END;

-- Keyword search over message text; the thread title is copied into each row so it can be weighted.
-- Triggers keep it in step with messages (including cascaded deletes) and with thread renames.
CREATE VIRTUAL TABLE message_search USING fts5(
    title, body, user_id UNINDEXED, thread_id UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 0'
);

CREATE TRIGGER message_search_insert AFTER INSERT ON messages BEGIN
    INSERT INTO message_search (rowid, title, body, user_id, thread_id)
    VALUES (new.pk,
            COALESCE((SELECT title_terms FROM threads WHERE user_id = new.user_id AND id = new.thread_id), ''),
            new.search_terms, new.user_id, new.thread_id);
END;

CREATE TRIGGER message_search_update AFTER UPDATE OF search_terms ON messages BEGIN
    UPDATE message_search SET body = new.search_terms WHERE rowid = new.pk;
END;

CREATE TRIGGER message_search_delete AFTER DELETE ON messages BEGIN
    DELETE FROM message_search WHERE rowid = old.pk;
END;

CREATE TRIGGER message_search_title AFTER UPDATE OF title_terms ON threads BEGIN
    UPDATE message_search SET title = new.title_terms
    WHERE rowid IN (SELECT pk FROM messages WHERE user_id = new.user_id AND thread_id = new.id);
END;

CREATE TABLE skills (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    slug            TEXT NOT NULL,
    name            TEXT NOT NULL,
    description     TEXT NOT NULL,
    instructions    TEXT NOT NULL,
    enabled         BIGINT NOT NULL,
    renders_widgets BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    UNIQUE (user_id, slug)
);

CREATE TABLE mcp_servers (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    url          TEXT NOT NULL,
    enabled      BIGINT NOT NULL,
    headers      TEXT NOT NULL,
    bearer_token TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX mcp_servers_user ON mcp_servers (user_id, created_at);

CREATE TABLE tasks (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    item       TEXT NOT NULL,
    completed  BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL
);
CREATE INDEX tasks_user ON tasks (user_id, created_at);

CREATE TABLE artifacts (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    thread_id  TEXT,
    title      TEXT NOT NULL,
    html       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    FOREIGN KEY (user_id, thread_id) REFERENCES threads(user_id, id) ON DELETE CASCADE
);
