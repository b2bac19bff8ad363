// The console's views live in the URL's fragment ('#/queues/%2F/orders'), so the server serves
// one page and the browser's back button and bookmarks work. Segments are percent-encoded.
import { useEffect, useState } from 'preact/hooks';

/** The fragment's decoded segments ('#/queue/%2F/q' → ['queue', '/', 'q']); [] for none. */
export function currentRoute(): string[] {
  const hash = location.hash.replace(/^#\/?/, '');
  if (hash === '') return [];
  return hash.split('/').map((segment) => {
    try {
      return decodeURIComponent(segment);
    } catch {
      return segment;
    }
  });
}

/** The fragment link to a view: `href('queue', vhost, name)`. */
export function href(...segments: readonly string[]): string {
  return `#/${segments.map(encodeURIComponent).join('/')}`;
}

export function navigate(...segments: readonly string[]): void {
  location.hash = href(...segments);
}

/** The current route, re-rendering on every change of the fragment. */
export function useRoute(): string[] {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const changed = (): void => setRoute(currentRoute());
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}
