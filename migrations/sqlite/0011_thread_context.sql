-- Long threads: a send reads a thread newest first and only as far back as its model's context
-- window reaches, so two things must be known without reading the whole thread.
--
-- Which user message is an edit: `edit_of` is the position of the earlier user message with the
-- same id that the edit replaces (NULL for every other message). Reading backwards, a send can then
-- tell at once whether an edit reaches below what it has read. Filled in for the messages stored
-- before this version.
ALTER TABLE messages ADD COLUMN edit_of BIGINT;
-- An append finds the message an edit replaces by its id within the thread; without this index both
-- databases walk the thread's position key instead, a cost that grows with the thread.
CREATE INDEX messages_thread_ids ON messages (user_id, thread_id, id, seq);
UPDATE messages SET edit_of = (
    SELECT MAX(p.seq) FROM messages p
    WHERE p.user_id = messages.user_id AND p.thread_id = messages.thread_id AND p.id = messages.id
      AND p.role = 'user' AND p.seq < messages.seq
) WHERE role = 'user';

-- What stands in for the older part of a thread that no longer fits: the conversation up to the
-- stored message at `through_seq` (`covered` messages of it), as a summary written from the last
-- `summarised` of them, or, without a summary, left out with a note. One row per thread, replaced at
-- each compaction; the thread's messages themselves are never changed.
CREATE TABLE thread_contexts (
    user_id     TEXT NOT NULL,
    thread_id   TEXT NOT NULL,
    through_seq BIGINT NOT NULL,
    covered     BIGINT NOT NULL,
    summarised  BIGINT NOT NULL,
    summary     TEXT,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (user_id, thread_id),
    FOREIGN KEY (user_id, thread_id) REFERENCES threads(user_id, id) ON DELETE CASCADE
);
