-- Search that costs what the searching user has stored, not what the whole instance has.
--
-- Every indexed word is written with its user's key in front: the hex of the user id followed by
-- `x` (hex has no `x`, so no key is the start of another user's key and word). A query asks only for
-- words that start with the searching user's key, so the full-text index never reads another user's
-- entries, also for prefix queries. The key is an implementation detail of this index; the
-- application builds the same key for its queries.
--
-- The tables are contentless (the text is in `messages` and `threads` already) and allow deletes by
-- rowid. `chat_search` has one row per message (rowid `messages.pk`) with its thread's title, so a
-- query's words may be split between title and text. `thread_title_search` has one row per thread,
-- so a thread is found by its title before it has messages; its rowid is `threads.search_rowid`
-- (a column of its own: VACUUM may renumber the implicit rowid of `threads`).
DROP TRIGGER message_search_insert;
DROP TRIGGER message_search_update;
DROP TRIGGER message_search_delete;
DROP TRIGGER message_search_title;
DROP TABLE message_search;

CREATE VIRTUAL TABLE chat_search USING fts5(
    title, body,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

CREATE VIRTUAL TABLE thread_title_search USING fts5(
    title,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

ALTER TABLE threads ADD COLUMN search_rowid INTEGER;
UPDATE threads SET search_rowid = rowid;
CREATE UNIQUE INDEX threads_search_rowid ON threads (search_rowid);

-- `terms` are single-space separated words (never leading or trailing spaces), so putting the key
-- before the first word and after every space keys every word.
INSERT INTO chat_search (rowid, title, body)
SELECT m.pk,
       CASE WHEN t.title_terms = '' THEN '' ELSE hex(m.user_id) || 'x' || replace(t.title_terms, ' ', ' ' || hex(m.user_id) || 'x') END,
       CASE WHEN m.search_terms = '' THEN '' ELSE hex(m.user_id) || 'x' || replace(m.search_terms, ' ', ' ' || hex(m.user_id) || 'x') END
FROM messages m JOIN threads t ON t.user_id = m.user_id AND t.id = m.thread_id;

INSERT INTO thread_title_search (rowid, title)
SELECT search_rowid,
       CASE WHEN title_terms = '' THEN '' ELSE hex(user_id) || 'x' || replace(title_terms, ' ', ' ' || hex(user_id) || 'x') END
FROM threads;

CREATE TRIGGER chat_search_insert AFTER INSERT ON messages BEGIN
    INSERT INTO chat_search (rowid, title, body)
    SELECT new.pk,
           CASE WHEN t.title_terms = '' THEN '' ELSE hex(new.user_id) || 'x' || replace(t.title_terms, ' ', ' ' || hex(new.user_id) || 'x') END,
           CASE WHEN new.search_terms = '' THEN '' ELSE hex(new.user_id) || 'x' || replace(new.search_terms, ' ', ' ' || hex(new.user_id) || 'x') END
    FROM threads t WHERE t.user_id = new.user_id AND t.id = new.thread_id;
END;

CREATE TRIGGER chat_search_update AFTER UPDATE OF search_terms ON messages BEGIN
    DELETE FROM chat_search WHERE rowid = old.pk;
    INSERT INTO chat_search (rowid, title, body)
    SELECT new.pk,
           CASE WHEN t.title_terms = '' THEN '' ELSE hex(new.user_id) || 'x' || replace(t.title_terms, ' ', ' ' || hex(new.user_id) || 'x') END,
           CASE WHEN new.search_terms = '' THEN '' ELSE hex(new.user_id) || 'x' || replace(new.search_terms, ' ', ' ' || hex(new.user_id) || 'x') END
    FROM threads t WHERE t.user_id = new.user_id AND t.id = new.thread_id;
END;

CREATE TRIGGER chat_search_delete AFTER DELETE ON messages BEGIN
    DELETE FROM chat_search WHERE rowid = old.pk;
END;

-- A new thread takes the next search rowid (the unique index answers MAX at once).
CREATE TRIGGER thread_search_insert AFTER INSERT ON threads BEGIN
    UPDATE threads SET search_rowid = (SELECT COALESCE(MAX(search_rowid), 0) + 1 FROM threads)
    WHERE user_id = new.user_id AND id = new.id;
    INSERT INTO thread_title_search (rowid, title)
    SELECT search_rowid,
           CASE WHEN new.title_terms = '' THEN '' ELSE hex(new.user_id) || 'x' || replace(new.title_terms, ' ', ' ' || hex(new.user_id) || 'x') END
    FROM threads WHERE user_id = new.user_id AND id = new.id;
END;

-- A rename re-indexes the title and every message of the thread (they carry the title).
CREATE TRIGGER thread_search_title AFTER UPDATE OF title_terms ON threads BEGIN
    DELETE FROM thread_title_search WHERE rowid = old.search_rowid;
    INSERT INTO thread_title_search (rowid, title)
    VALUES (new.search_rowid,
            CASE WHEN new.title_terms = '' THEN '' ELSE hex(new.user_id) || 'x' || replace(new.title_terms, ' ', ' ' || hex(new.user_id) || 'x') END);
    DELETE FROM chat_search
    WHERE rowid IN (SELECT pk FROM messages WHERE user_id = new.user_id AND thread_id = new.id);
    INSERT INTO chat_search (rowid, title, body)
    SELECT pk,
           CASE WHEN new.title_terms = '' THEN '' ELSE hex(new.user_id) || 'x' || replace(new.title_terms, ' ', ' ' || hex(new.user_id) || 'x') END,
           CASE WHEN search_terms = '' THEN '' ELSE hex(new.user_id) || 'x' || replace(search_terms, ' ', ' ' || hex(new.user_id) || 'x') END
    FROM messages WHERE user_id = new.user_id AND thread_id = new.id;
END;

CREATE TRIGGER thread_search_delete AFTER DELETE ON threads BEGIN
    DELETE FROM thread_title_search WHERE rowid = old.search_rowid;
END;
