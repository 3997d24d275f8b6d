-- The harness engine's per-thread workspace: one row per file or directory, keyed by the path inside
-- the workspace. It lives and dies with its thread.
CREATE TABLE workspace_files (
    user_id    TEXT NOT NULL,
    thread_id  TEXT NOT NULL,
    path       TEXT NOT NULL,
    is_dir     BIGINT NOT NULL,
    content    BYTEA NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, thread_id, path),
    FOREIGN KEY (user_id, thread_id) REFERENCES threads(user_id, id) ON DELETE CASCADE
);
