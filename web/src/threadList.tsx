// The sidebar's thread list, read a page at a time: the first page when the list is shown, the next
// one when the end of the list scrolls into view. A send or a rename refreshes only the thread it
// changed, so the app never reads the whole list again.
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, api, apiPage, type Thread } from './api';

export interface ThreadList {
  threads: Thread[];
  hasMore: boolean;
  loadMore(): void;
  /// Reads one thread again and moves it to the top (it was just written to); drops it when gone.
  refresh(id: string): void;
  remove(id: string): void;
}

/// The list at `path` (`null`: none); a new `version` reads its first page again.
export function useThreadList(path: string | null, version = 0): ThreadList {
  const [threads, setThreads] = useState<Thread[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const loading = useRef(false);
  // Answers for an earlier path or version are dropped.
  const generation = useRef(0);

  const load = useCallback((from: string, gen: number, append: boolean) => {
    loading.current = true;
    apiPage<Thread>(from)
      .then((page) => {
        if (gen !== generation.current) return;
        setThreads((list) => {
          if (!append) return page.items;
          const seen = new Set(list.map((t) => t.id));
          return [...list, ...page.items.filter((t) => !seen.has(t.id))];
        });
        setNext(page.next);
      })
      .catch(() => undefined)
      .finally(() => {
        if (gen === generation.current) loading.current = false;
      });
  }, []);

  useEffect(() => {
    const gen = ++generation.current;
    setNext(null);
    if (path === null) {
      setThreads([]);
      return;
    }
    load(path, gen, false);
  }, [path, version, load]);

  const loadMore = useCallback(() => {
    if (next && !loading.current) load(next, generation.current, true);
  }, [next, load]);

  const remove = useCallback((id: string) => setThreads((list) => list.filter((t) => t.id !== id)), []);

  const refresh = useCallback(
    (id: string) => {
      api<Thread>(`/v1/threads/${encodeURIComponent(id)}`)
        .then((thread) => setThreads((list) => [thread, ...list.filter((t) => t.id !== id)]))
        .catch((e) => e instanceof ApiError && e.status === 404 && remove(id));
    },
    [remove],
  );

  return { threads, hasMore: next !== null, loadMore, refresh, remove };
}

/// The end of a scrolling list: asks for more whenever it comes into view (or is in view when the
/// request for more changes, as after a short page).
export function MoreWhenVisible({ onVisible }: { onVisible(): void }) {
  const ref = useRef<HTMLLIElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const observer = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && onVisible(), {
      root: el.parentElement,
      rootMargin: '200px',
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, [onVisible]);
  return <li ref={ref} className="more" aria-hidden="true" />;
}
