// KaTeX is loaded only when an answer contains math, so chats without formulas never download it.
import type katexType from 'katex';

let katex: typeof katexType | null = null;
let loading: Promise<void> | null = null;

export function mathReady(): boolean {
  return katex !== null;
}

export function loadMath(): Promise<void> {
  loading ??= Promise.all([import('katex'), import('katex/dist/katex.min.css')]).then(([mod]) => {
    katex = mod.default;
  });
  return loading;
}

/// HTML for one formula, or `null` while KaTeX is not loaded yet.
export function renderMath(tex: string, display: boolean): string | null {
  if (!katex) return null;
  return katex.renderToString(tex, { displayMode: display, throwOnError: false, output: 'html' });
}
