// Markdown for answers: raw HTML in model text is shown as text, links are limited to web and mail
// addresses, and `[N]` citations become chips linking to the entry of the answer's source list that
// the gateway registered as N. A chip the gateway checked shows its class (supported, weak,
// unsupported, snippet only) and, on hover, keyboard focus or a tap, the passage of the source that
// matched the claim.
import { Marked, type Tokens } from 'marked';
import { loadMath, mathReady, renderMath } from './math';

export interface Source {
  index: number;
  url: string;
  title?: string;
}

/// One citation as the gateway checked it (the answer's `citations` metadata).
export interface CitationCheck {
  n: number;
  textPart: number;
  class: 'supported' | 'weak' | 'unsupported';
  snippetOnly: boolean;
  passage?: string;
}

const CLASS_LABELS: Record<CitationCheck['class'], string> = {
  supported: 'supported by the source',
  weak: 'only partly supported by the source',
  unsupported: 'not supported by the source',
};

function checkLabel(check: CitationCheck): string {
  return `${CLASS_LABELS[check.class]}${check.snippetOnly ? ', which was only seen as a search snippet' : ''}`;
}

/// The chip's passage, shown beside it on hover or focus and read out as its description.
function passageHtml(check: CitationCheck, id: string): string {
  const label = checkLabel(check);
  const said = check.passage ? `: “${escapeHtml(check.passage)}”` : '.';
  return `<span class="cite-passage" role="tooltip" id="${escapeHtml(id)}"><b>${escapeHtml(label[0].toUpperCase() + label.slice(1))}</b>${said}</span>`;
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
/// element of the answer's source list that a `[N]` chip links to. `checks` are this text part's
/// checked citations in order: the k-th chip takes the next check of its number.
export function renderMarkdown(
  text: string,
  sources: Map<number, Source>,
  anchor: (n: number) => string,
  checks: CitationCheck[] = [],
  idPrefix = 'cite',
): string {
  const html = marked.parse(text, { async: false }) as string;
  let next = 0;
  let chips = 0;
  return html.replace(/<cite-slot data-n="(\d+)"><\/cite-slot>/g, (_, n: string) => {
    const source = sources.get(Number(n));
    if (!source || !safeHref(source.url)) return `[${n}]`;
    const title = escapeHtml(source.title || source.url);
    const found = checks.findIndex((c, i) => i >= next && c.n === Number(n));
    const check = found >= 0 ? checks[found] : undefined;
    if (found >= 0) next = found + 1;
    const href = `#${escapeHtml(anchor(Number(n)))}`;
    if (!check) {
      return `<a class="cite" href="${href}" title="${title}" aria-label="Source ${n}: ${title}" data-citation="${n}">${n}</a>`;
    }
    const id = `${idPrefix}-${chips++}`;
    const kind = `cite-${check.class}${check.snippetOnly ? ' cite-snippet' : ''}`;
    return (
      `<span class="cite-wrap"><a class="cite ${kind}" href="${href}" title="${title}" aria-label="Source ${n}: ${title}, ${escapeHtml(checkLabel(check))}" ` +
      `aria-describedby="${escapeHtml(id)}" data-citation="${n}" data-check="${check.class}"${check.snippetOnly ? ' data-snippet-only="true"' : ''}>${n}</a>` +
      `${passageHtml(check, id)}</span>`
    );
  });
}
