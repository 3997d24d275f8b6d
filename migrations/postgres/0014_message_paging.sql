-- A page of a thread's current conversation is chosen from the thread's outline (position, id and
-- role of every message: what decides which messages an edit or a regenerate replaced) before the
-- page's rows are read. This index holds that outline, so choosing a page is an index-only scan that
-- reads neither the parts nor the text of the messages it skips.
CREATE INDEX messages_conversation_outline ON messages (user_id, thread_id, seq) INCLUDE (role, id);
