-- What each user keeps, counted as it is written: the bytes of their messages (parts, metadata and
-- their search text), artifacts and workspace files, and their number of threads. (Kept Responses API
-- responses come in a later migration and are bounded by their retention, not counted here.)
-- Triggers keep the counters in the transaction of the write that changes them, cascaded
-- deletes included, so the storage quota is checked by reading one row instead of summing every row
-- the user has.
CREATE TABLE user_storage (
    user_id TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    bytes   BIGINT NOT NULL DEFAULT 0,
    threads BIGINT NOT NULL DEFAULT 0
);

-- A user being deleted gets no row back from the deletes it cascades to.
CREATE FUNCTION add_user_storage(owner TEXT, delta_bytes BIGINT, delta_threads BIGINT)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO user_storage (user_id, bytes, threads)
    SELECT owner, delta_bytes, delta_threads WHERE EXISTS (SELECT 1 FROM users WHERE id = owner)
    ON CONFLICT (user_id) DO UPDATE
    SET bytes = user_storage.bytes + EXCLUDED.bytes,
        threads = user_storage.threads + EXCLUDED.threads
$$;

CREATE FUNCTION message_bytes(m messages) RETURNS BIGINT LANGUAGE sql IMMUTABLE AS $$
    SELECT (octet_length(m.parts) + octet_length(m.metadata) + octet_length(m.search_text)
            + octet_length(m.search_terms))::BIGINT
$$;

CREATE FUNCTION count_message_storage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM add_user_storage(NEW.user_id, message_bytes(NEW), 0);
    ELSIF TG_OP = 'UPDATE' THEN
        PERFORM add_user_storage(NEW.user_id, message_bytes(NEW) - message_bytes(OLD), 0);
    ELSE
        PERFORM add_user_storage(OLD.user_id, -message_bytes(OLD), 0);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_storage AFTER INSERT OR DELETE OR UPDATE OF parts, metadata, search_text, search_terms
    ON messages FOR EACH ROW EXECUTE FUNCTION count_message_storage();

CREATE FUNCTION count_artifact_storage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM add_user_storage(NEW.user_id, octet_length(NEW.title) + octet_length(NEW.html), 0);
    ELSE
        PERFORM add_user_storage(OLD.user_id, -(octet_length(OLD.title) + octet_length(OLD.html)), 0);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER artifacts_storage AFTER INSERT OR DELETE ON artifacts
    FOR EACH ROW EXECUTE FUNCTION count_artifact_storage();

CREATE FUNCTION count_workspace_storage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM add_user_storage(OLD.user_id, -(octet_length(OLD.path) + octet_length(OLD.content)), 0);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM add_user_storage(NEW.user_id, octet_length(NEW.path) + octet_length(NEW.content), 0);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER workspace_files_storage AFTER INSERT OR DELETE OR UPDATE OF path, content
    ON workspace_files FOR EACH ROW EXECUTE FUNCTION count_workspace_storage();

CREATE FUNCTION count_thread_storage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM add_user_storage(NEW.user_id, 0, 1);
    ELSE
        PERFORM add_user_storage(OLD.user_id, 0, -1);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER threads_storage AFTER INSERT OR DELETE ON threads
    FOR EACH ROW EXECUTE FUNCTION count_thread_storage();

-- What existing users already keep.
INSERT INTO user_storage (user_id, bytes, threads)
SELECT u.id,
    COALESCE((SELECT SUM(message_bytes(m)) FROM messages m WHERE m.user_id = u.id), 0)
    + COALESCE((SELECT SUM(octet_length(a.title) + octet_length(a.html)) FROM artifacts a
                WHERE a.user_id = u.id), 0)
    + COALESCE((SELECT SUM(octet_length(w.path) + octet_length(w.content)) FROM workspace_files w
                WHERE w.user_id = u.id), 0),
    (SELECT COUNT(*) FROM threads t WHERE t.user_id = u.id)
FROM users u;
