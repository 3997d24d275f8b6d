-- What each user keeps, counted as it is written (see the Postgres migration of the same number):
-- triggers keep the counters in the transaction of the write, cascaded deletes included. Sizes are
-- bytes: text is measured as its UTF-8 encoding.
CREATE TABLE user_storage (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    bytes   BIGINT NOT NULL DEFAULT 0,
    threads BIGINT NOT NULL DEFAULT 0
);

CREATE TRIGGER messages_storage_insert AFTER INSERT ON messages BEGIN
    INSERT INTO user_storage (user_id, bytes, threads)
    SELECT NEW.user_id, (length(CAST(NEW.parts AS BLOB)) + length(CAST(NEW.metadata AS BLOB)) + length(CAST(NEW.search_text AS BLOB)) + length(CAST(NEW.search_terms AS BLOB))), 0 WHERE EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
    ON CONFLICT (user_id) DO UPDATE
    SET bytes = bytes + excluded.bytes, threads = threads + excluded.threads;
END;

CREATE TRIGGER messages_storage_delete AFTER DELETE ON messages BEGIN
    INSERT INTO user_storage (user_id, bytes, threads)
    SELECT OLD.user_id, -(length(CAST(OLD.parts AS BLOB)) + length(CAST(OLD.metadata AS BLOB)) + length(CAST(OLD.search_text AS BLOB)) + length(CAST(OLD.search_terms AS BLOB))), 0 WHERE EXISTS (SELECT 1 FROM users WHERE id = OLD.user_id)
    ON CONFLICT (user_id) DO UPDATE
    SET bytes = bytes + excluded.bytes, threads = threads + excluded.threads;
END;

CREATE TRIGGER messages_storage_update AFTER UPDATE OF parts, metadata, search_text, search_terms ON messages BEGIN
    INSERT INTO user_storage (user_id, bytes, threads)
    SELECT NEW.user_id, (length(CAST(NEW.parts AS BLOB)) + length(CAST(NEW.metadata AS BLOB)) + length(CAST(NEW.search_text AS BLOB)) + length(CAST(NEW.search_terms AS BLOB))) - (length(CAST(OLD.parts AS BLOB)) + length(CAST(OLD.metadata AS BLOB)) + length(CAST(OLD.search_text AS BLOB)) + length(CAST(OLD.search_terms AS BLOB))), 0 WHERE EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
    ON CONFLICT (user_id) DO UPDATE
    SET bytes = bytes + excluded.bytes, threads = threads + excluded.threads;
END;

CREATE TRIGGER artifacts_storage_insert AFTER INSERT ON artifacts BEGIN
    INSERT INTO user_storage (user_id, bytes, threads)
    SELECT NEW.user_id, (length(CAST(NEW.title AS BLOB)) + length(CAST(NEW.html AS BLOB))), 0 WHERE EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
    ON CONFLICT (user_id) DO UPDATE
    SET bytes = bytes + excluded.bytes, threads = threads + excluded.threads;
END;

CREATE TRIGGER artifacts_storage_delete AFTER DELETE ON artifacts BEGIN
    INSERT INTO user_storage (user_id, bytes, threads)
    SELECT OLD.user_id, -(length(CAST(OLD.title AS BLOB)) + length(CAST(OLD.html AS BLOB))), 0 WHERE EXISTS (SELECT 1 FROM users WHERE id = OLD.user_id)
    ON CONFLICT (user_id) DO UPDATE
    SET bytes = bytes + excluded.bytes, threads = threads + excluded.threads;
END;

CREATE TRIGGER workspace_files_storage_insert AFTER INSERT ON workspace_files BEGIN
    INSERT INTO user_storage (user_id, bytes, threads)
    SELECT NEW.user_id, (length(CAST(NEW.path AS BLOB)) + length(CAST(NEW.content AS BLOB))), 0 WHERE EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
    ON CONFLICT (user_id) DO UPDATE
    SET bytes = bytes + excluded.bytes, threads = threads + excluded.threads;
END;

CREATE TRIGGER workspace_files_storage_delete AFTER DELETE ON workspace_files BEGIN
    INSERT INTO user_storage (user_id, bytes, threads)
    SELECT OLD.user_id, -(length(CAST(OLD.path AS BLOB)) + length(CAST(OLD.content AS BLOB))), 0 WHERE EXISTS (SELECT 1 FROM users WHERE id = OLD.user_id)
    ON CONFLICT (user_id) DO UPDATE
    SET bytes = bytes + excluded.bytes, threads = threads + excluded.threads;
END;

CREATE TRIGGER workspace_files_storage_update AFTER UPDATE OF path, content ON workspace_files BEGIN
    INSERT INTO user_storage (user_id, bytes, threads)
    SELECT NEW.user_id, (length(CAST(NEW.path AS BLOB)) + length(CAST(NEW.content AS BLOB))) - (length(CAST(OLD.path AS BLOB)) + length(CAST(OLD.content AS BLOB))), 0 WHERE EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
    ON CONFLICT (user_id) DO UPDATE
    SET bytes = bytes + excluded.bytes, threads = threads + excluded.threads;
END;

CREATE TRIGGER threads_storage_insert AFTER INSERT ON threads BEGIN
    INSERT INTO user_storage (user_id, bytes, threads)
    SELECT NEW.user_id, 0, 1 WHERE EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
    ON CONFLICT (user_id) DO UPDATE
    SET bytes = bytes + excluded.bytes, threads = threads + excluded.threads;
END;

CREATE TRIGGER threads_storage_delete AFTER DELETE ON threads BEGIN
    INSERT INTO user_storage (user_id, bytes, threads)
    SELECT OLD.user_id, 0, -1 WHERE EXISTS (SELECT 1 FROM users WHERE id = OLD.user_id)
    ON CONFLICT (user_id) DO UPDATE
    SET bytes = bytes + excluded.bytes, threads = threads + excluded.threads;
END;

-- What existing users already keep.
INSERT INTO user_storage (user_id, bytes, threads)
SELECT u.id,
    COALESCE((SELECT SUM(length(CAST(x.parts AS BLOB)) + length(CAST(x.metadata AS BLOB)) + length(CAST(x.search_text AS BLOB)) + length(CAST(x.search_terms AS BLOB))) FROM messages x WHERE x.user_id = u.id), 0)
    + COALESCE((SELECT SUM(length(CAST(x.title AS BLOB)) + length(CAST(x.html AS BLOB))) FROM artifacts x WHERE x.user_id = u.id), 0)
    + COALESCE((SELECT SUM(length(CAST(x.path AS BLOB)) + length(CAST(x.content AS BLOB))) FROM workspace_files x WHERE x.user_id = u.id), 0),
    (SELECT COUNT(*) FROM threads t WHERE t.user_id = u.id)
FROM users u;
