// The keyboard shortcuts, as the app implements them (App.tsx and Chat.tsx).
export const SHORTCUTS: [keys: string, what: string][] = [
  ['Enter', 'Send the message'],
  ['Shift+Enter', 'New line in the message'],
  ['Escape', 'Stop the answer; otherwise close the open panel, the inspector or the thread list'],
  ['Ctrl+K', 'Search threads'],
  ['Ctrl+Shift+O', 'New chat'],
  ['Ctrl+/', 'Show these shortcuts'],
];

export function ShortcutsPanel() {
  return (
    <div>
      <h2 id="panel-title">Keyboard shortcuts</h2>
      <dl className="shortcuts">
        {SHORTCUTS.map(([keys, what]) => (
          <div key={keys}>
            <dt>
              {keys.split('+').map((k, i) => (
                <span key={k}>
                  {i > 0 && '+'}
                  <kbd>{k}</kbd>
                </span>
              ))}
            </dt>
            <dd>{what}</dd>
          </div>
        ))}
      </dl>
      <p className="hint">On a Mac, Cmd works wherever Ctrl is listed. Tab moves through the page in reading order.</p>
    </div>
  );
}
