// The card on a tool call that waits for the user's yes (its part is in state `approval-requested`):
// what the tool is and what it was given, Approve, and Deny with an optional reason the model reads.
// The answer goes back through useChat's `addToolApprovalResponse`; the chat sends it on its own and
// the same answer continues. A part read from the stored thread (after a reload, on another device)
// carries the same approval id, so the card works there too.
import { useId, useState } from 'react';

/// The answer to one waiting call, as `addToolApprovalResponse` takes it.
export interface ApprovalAnswer {
  id: string;
  approved: boolean;
  reason?: string;
}

/// How much of a call's input the card shows; the tool's details hold all of it.
const INPUT_SHOWN_CHARS = 2000;
/// The gateway's bound on a denial's reason (longer ones are refused).
const REASON_MAX_CHARS = 2000;

/// The call's input as indented JSON, cut where it would make the card long.
function boundedInput(input: unknown): string {
  const text = JSON.stringify(input ?? null, null, 2) ?? 'null';
  return text.length > INPUT_SHOWN_CHARS ? `${text.slice(0, INPUT_SHOWN_CHARS)}\n… (${text.length - INPUT_SHOWN_CHARS} more characters)` : text;
}

interface Props {
  approvalId: string;
  tool: string;
  input: unknown;
  /// An answer is on its way or another turn runs: the buttons wait.
  disabled: boolean;
  onAnswer(answer: ApprovalAnswer): void;
}

export function ApprovalCard({ approvalId, tool, input, disabled, onAnswer }: Props) {
  const [reason, setReason] = useState('');
  const heading = useId();
  const reasonId = useId();
  const deny = () => {
    const why = reason.trim();
    onAnswer({ id: approvalId, approved: false, ...(why ? { reason: why } : {}) });
  };
  return (
    <section className="approval" role="group" aria-labelledby={heading} data-approval-id={approvalId}>
      <h4 id={heading}>
        Allow <code>{tool}</code> to run?
      </h4>
      <pre className="approval-input" tabIndex={0} aria-label={`Input of ${tool}`}>
        {boundedInput(input)}
      </pre>
      <label className="approval-reason" htmlFor={reasonId}>
        Reason for a denial (optional)
      </label>
      <input
        id={reasonId}
        type="text"
        value={reason}
        maxLength={REASON_MAX_CHARS}
        onChange={(e) => setReason(e.target.value)}
        onKeyDown={(e) => {
          // Enter in the reason field denies: it is the only answer a reason belongs to.
          if (e.key === 'Enter' && !e.nativeEvent.isComposing && !disabled) {
            e.preventDefault();
            deny();
          }
        }}
      />
      <div className="row">
        <button type="button" className="approve" disabled={disabled} onClick={() => onAnswer({ id: approvalId, approved: true })}>
          Approve
        </button>
        <button type="button" className="deny" disabled={disabled} onClick={deny}>
          Deny
        </button>
      </div>
    </section>
  );
}
