// Markdown for answers: raw HTML in model text is shown as text, links are limited to web and mail
// addresses, and `[N]` citations become chips linking to the entry of the answer's source list that
// the gateway registered as N.
import { Marked, type Tokens } from 'marked';
import { loadMath, mathReady, renderMath } from './math';

export interface Source {
  index: number;
  url: string;
  title?: string;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function safeHref(href: string): string | null {
  try {
    const url = new URL(href, 'https://invalid.example/');
    return ['http:', 'https:', 'mailto:'].includes(url.protocol) && /^(https?:|mailto:)/i.test(href) ? href : null;
  } catch {
    return null;
  }
}

function mathHtml(tex: string, display: boolean): string {
  const html = renderMath(tex, display);
  if (html !== null) return display ? `<div class="math">${html}</div>` : html;
  return `<code class="math-pending">${escapeHtml(tex)}</code>`;
}

// `$$…$$` and `\[…\]` are display math; `$…$` and `\(…\)` inline. A `$` followed by a space or
// closing before a digit is a price, not math.
const BLOCK_MATH = /^(?:\$\$([\s\S]+?)\$\$|\\\[([\s\S]+?)\\\])[ \t]*(?:\n|$)/;
const INLINE_MATH = /^(?:\$([^\s$](?:[^$\n]*?[^\s$\\])?)\$(?!\d)|\\\((.+?)\\\))/;

/// Whether a text has formulas to typeset.
export function hasMath(text: string): boolean {
  return /\$\$[\s\S]+?\$\$|\\\[[\s\S]+?\\\]|\\\(.+?\\\)|\$[^\s$][^$\n]*\$(?!\d)/.test(text);
}

export { loadMath, mathReady };

const marked = new Marked({ gfm: true, breaks: false });
marked.use({
  extensions: [
    {
      name: 'mathBlock',
      level: 'block',
      start(src: string) {
        const i = src.search(/\$\$|\\\[/);
        return i < 0 ? undefined : i;
      },
      tokenizer(src: string) {
        const m = BLOCK_MATH.exec(src);
        return m ? { type: 'mathBlock', raw: m[0], tex: (m[1] ?? m[2]).trim() } : undefined;
      },
      renderer(token: Tokens.Generic) {
        return mathHtml(token.tex, true);
      },
    },
    {
      name: 'mathInline',
      level: 'inline',
      start(src: string) {
        const i = src.search(/\$|\\\(/);
        return i < 0 ? undefined : i;
      },
      tokenizer(src: string) {
        const m = INLINE_MATH.exec(src);
        return m ? { type: 'mathInline', raw: m[0], tex: m[1] ?? m[2] } : undefined;
      },
      renderer(token: Tokens.Generic) {
        return mathHtml(token.tex, false);
      },
    },
    {
      name: 'citation',
      level: 'inline',
      start(src: string) {
        const i = src.search(/\[\d{1,3}\]/);
        return i < 0 ? undefined : i;
      },
      tokenizer(src: string) {
        const m = /^\[(\d{1,3})\](?![(\[:])/.exec(src);
        return m ? { type: 'citation', raw: m[0], n: Number(m[1]) } : undefined;
      },
      renderer(token: Tokens.Generic) {
        return `<cite-slot data-n="${token.n}"></cite-slot>`;
      },
    },
  ],
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag) {
      return escapeHtml(token.text ?? token.raw ?? '');
    },
    link(token: Tokens.Link) {
      const text = this.parser.parseInline(token.tokens);
      const href = safeHref(token.href);
      if (!href) return text;
      return `<a href="${escapeHtml(href)}" target="_blank" rel="noopener noreferrer">${text}</a>`;
    },
    image(token: Tokens.Image) {
      return escapeHtml(token.text ?? '');
    },
  },
});

/// HTML for an answer's text; `sources` maps citation numbers to their sources, and `anchor` names the
/// element of the answer's source list that a `[N]` chip links to.
export function renderMarkdown(text: string, sources: Map<number, Source>, anchor: (n: number) => string): string {
  const html = marked.parse(text, { async: false }) as string;
  return html.replace(/<cite-slot data-n="(\d+)"><\/cite-slot>/g, (_, n: string) => {
    const source = sources.get(Number(n));
    if (!source || !safeHref(source.url)) return `[${n}]`;
    const title = escapeHtml(source.title || source.url);
    return `<a class="cite" href="#${escapeHtml(anchor(Number(n)))}" title="${title}" aria-label="Source ${n}: ${title}" data-citation="${n}">${n}</a>`;
  });
}
