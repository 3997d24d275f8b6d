-- Questions a running tool call puts to the user and waits on (first: an MCP server's
-- elicitation). The call waits live, on the instance that runs its turn; the answer may be given on
-- any instance, so it is written here and the waiting call reads it. `question` is what the user
-- is shown (JSON text); `kind` says how to read it ('elicitation'). `state` goes from `pending`
-- to `answered` (with `answer`, JSON text), `expired` (not answered in time) or `cancelled`
-- (Stop, the call ended), once. Times are epoch ms.
CREATE TABLE tool_questions (
    user_id      TEXT NOT NULL,
    question_id  TEXT NOT NULL,
    thread_id    TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    turn_id      TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    kind         TEXT NOT NULL,
    question     TEXT NOT NULL,
    state        TEXT NOT NULL DEFAULT 'pending',
    answer       TEXT,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    PRIMARY KEY (user_id, question_id)
);
CREATE INDEX tool_questions_by_thread ON tool_questions (user_id, thread_id, state);
