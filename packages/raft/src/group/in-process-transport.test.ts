import { transportCompliance } from '../compliance/transport-compliance.ts';
import { InProcessHub } from './in-process-transport.ts';
import type { Transport } from './transport.ts';

let hub = new InProcessHub();
let transports: Transport[] = [];

transportCompliance('InProcessTransport', {
  async start(count) {
    hub = new InProcessHub();
    transports = Array.from({ length: count }, (_, i) => hub.connect(`n${i}`));
    return transports;
  },
  async cut(index) {
    hub.disconnect(`n${index}`);
  },
  unreachablePeer: () => 'nobody',
  async teardown() {
    for (const transport of transports) await transport.close();
  },
});
