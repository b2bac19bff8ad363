// Routing: exchange binding indexes (kept inside the metadata state) and the publish-path `route`.

export type { HeadersMatchMode, HeadersPattern } from './headers-match.ts';
export { headersMatch, headerValueEquals, parseHeadersPattern } from './headers-match.ts';
export { route } from './route.ts';
export { topicWords } from './topic-trie.ts';
