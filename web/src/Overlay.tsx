// A side panel or the inspector: beside the chat on a wide screen, over it on a small one. It takes
// the focus when it opens and gives it back when it closes, so a keyboard user lands where they were.
import { useEffect, useRef, type ReactNode } from 'react';

export function Overlay({ label, className, children }: { label: string; className: string; children: ReactNode }) {
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    ref.current?.focus();
    return () => before?.focus();
  }, []);
  return (
    <aside ref={ref} className={`${className} overlay`} aria-label={label} tabIndex={-1}>
      {children}
    </aside>
  );
}
