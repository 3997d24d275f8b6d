-- Tool calls waiting for the user's approval (AI SDK 6+ `tool-approval-request`), kept with the
-- answer that asked, so the answer can come from any device, to any instance, after a restart.
-- A row is bound to its call (`tool_call_id`, `tool_name`, `input` as JSON text): the answer is
-- checked against it. `state` goes from `pending` to `used` (answered; the turn continued) or
-- `cancelled` (Stop), once; `expires_at` (epoch ms) is when an unanswered one counts as denied.
-- `model_id` is the model that asked: an answer that names none continues with it.
CREATE TABLE tool_approvals (
    user_id      TEXT NOT NULL,
    approval_id  TEXT NOT NULL,
    thread_id    TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    model_id     TEXT NOT NULL,
    input        TEXT NOT NULL,
    state        TEXT NOT NULL DEFAULT 'pending',
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    PRIMARY KEY (user_id, approval_id)
);
CREATE INDEX tool_approvals_by_thread ON tool_approvals (user_id, thread_id, state);
