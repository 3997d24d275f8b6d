-- Search that costs what the searching user has stored, not what the whole instance has.
--
-- Every indexed word is written with its user's key in front: the hex of the user id followed by
-- `x` (hex has no `x`, so no key is the start of another user's key and word). A query asks only for
-- words that start with the searching user's key, so a GIN lookup (prefix queries included) reads
-- only that user's entries, whatever plan the statement gets. The indexes are on expressions: the
-- keyed vectors are never stored in the rows.
--
-- A message carries its thread's title terms, so a query's words may be split between title and
-- text and the title weighs more; a rename rewrites them. A thread is also found by its title alone
-- (before it has messages).

CREATE FUNCTION user_search_terms(user_id TEXT, terms TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
    -- Ids are ASCII (`[A-Za-z0-9_-]`), so their hex does not depend on the database encoding.
    SELECT CASE WHEN terms = '' THEN ''
                ELSE encode(convert_to(user_id, 'UTF8'), 'hex') || 'x'
                     || replace(terms, ' ', ' ' || encode(convert_to(user_id, 'UTF8'), 'hex') || 'x')
           END
$$;

CREATE FUNCTION message_search_vector(user_id TEXT, title_terms TEXT, search_terms TEXT) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
    SELECT setweight(to_tsvector('simple'::regconfig, user_search_terms(user_id, title_terms)), 'A')
           || to_tsvector('simple'::regconfig, user_search_terms(user_id, search_terms))
$$;

CREATE FUNCTION thread_search_vector(user_id TEXT, title_terms TEXT) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
    SELECT setweight(to_tsvector('simple'::regconfig, user_search_terms(user_id, title_terms)), 'A')
$$;

ALTER TABLE messages ADD COLUMN title_terms TEXT NOT NULL DEFAULT '';
UPDATE messages m SET title_terms = t.title_terms
FROM threads t WHERE t.user_id = m.user_id AND t.id = m.thread_id AND t.title_terms <> '';

DROP INDEX messages_search;
ALTER TABLE messages DROP COLUMN search_vector;
ALTER TABLE threads DROP COLUMN title_vector;

CREATE INDEX messages_user_search ON messages
    USING GIN (message_search_vector(user_id, title_terms, search_terms));
CREATE INDEX threads_user_search ON threads
    USING GIN (thread_search_vector(user_id, title_terms));

-- A new message takes its thread's title terms (unless the insert names them: a thread created in
-- the same statement is not visible yet); a rename hands the new ones to every message.
CREATE FUNCTION message_title_terms() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.title_terms = '' THEN
        NEW.title_terms := COALESCE(
            (SELECT title_terms FROM threads WHERE user_id = NEW.user_id AND id = NEW.thread_id), '');
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER messages_title_terms BEFORE INSERT ON messages
    FOR EACH ROW EXECUTE FUNCTION message_title_terms();

CREATE FUNCTION thread_title_terms_to_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE messages SET title_terms = NEW.title_terms
    WHERE user_id = NEW.user_id AND thread_id = NEW.id AND title_terms <> NEW.title_terms;
    RETURN NULL;
END
$$;

CREATE TRIGGER threads_title_terms AFTER UPDATE OF title_terms ON threads
    FOR EACH ROW WHEN (OLD.title_terms IS DISTINCT FROM NEW.title_terms)
    EXECUTE FUNCTION thread_title_terms_to_messages();
