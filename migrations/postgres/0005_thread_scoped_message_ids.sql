-- Message ids are the client's (useChat makes them up per conversation), so they are unique only
-- within a thread's position order: the same id may appear in two threads, and an edited message
-- keeps its id while the version it replaces stays stored. A message's identity is its thread and
-- position; lookups by id stay indexed.
ALTER TABLE messages DROP CONSTRAINT messages_pkey;
ALTER TABLE messages DROP CONSTRAINT messages_user_id_thread_id_seq_key;
ALTER TABLE messages ADD PRIMARY KEY (user_id, thread_id, seq);
CREATE INDEX messages_by_id ON messages (user_id, id);
