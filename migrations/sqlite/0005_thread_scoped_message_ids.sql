-- Message ids are the client's (useChat makes them up per conversation), so they are unique only
-- within a thread's position order: the same id may appear in two threads, and an edited message
-- keeps its id while the version it replaces stays stored. SQLite cannot drop a constraint, so the
-- table is rebuilt with the same rows and `pk` values (the search index is keyed by `pk`).
DROP TRIGGER message_search_title;

CREATE TABLE messages_rebuilt (
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
    UNIQUE (user_id, thread_id, seq),
    FOREIGN KEY (user_id, thread_id) REFERENCES threads(user_id, id) ON DELETE CASCADE
);
INSERT INTO messages_rebuilt (pk, user_id, id, thread_id, seq, role, parts, metadata, status,
                              search_text, search_terms, created_at)
SELECT pk, user_id, id, thread_id, seq, role, parts, metadata, status, search_text, search_terms, created_at
FROM messages;
DROP TABLE messages;
ALTER TABLE messages_rebuilt RENAME TO messages;
CREATE INDEX messages_by_id ON messages (user_id, id);

CREATE TRIGGER messages_touch_thread AFTER INSERT ON messages BEGIN
    UPDATE threads SET updated_at = MAX(updated_at, new.created_at)
    WHERE user_id = new.user_id AND id = new.thread_id;
END;

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
