/** The routing index for each exchange type. */

import type { ExchangeType } from '../metadata/types.ts';
import { DirectIndex } from './direct-index.ts';
import { FanoutIndex } from './fanout-index.ts';
import { HeadersIndex } from './headers-match.ts';
import type { RoutingIndex } from './routing-index.ts';
import { TopicIndex } from './topic-trie.ts';

export function createRoutingIndex(type: ExchangeType): RoutingIndex {
  switch (type) {
    case 'direct':
      return new DirectIndex();
    case 'fanout':
      return new FanoutIndex();
    case 'topic':
      return new TopicIndex();
    case 'headers':
      return new HeadersIndex();
  }
}
