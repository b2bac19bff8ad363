import { describe, expect, it } from 'vitest';
import { unmetRequirement } from './probes.ts';

describe('unmetRequirement', () => {
  const why = 'dead-lettering of rejected messages (at-least-once) failed its probe: no arrival';

  it('reports a broker that lacks a feature as unsupported, with the probe’s reason', () => {
    expect(unmetRequirement('rabbitmq', why)).toEqual({ status: 'unsupported', reason: why });
    expect(unmetRequirement('styx', why)).toEqual({ status: 'unsupported', reason: why });
  });

  it('fails the case on the Styx AMQP column: a gap in the AMQP path, never a silent skip', () => {
    const r = unmetRequirement('styx-amqp', why);
    expect(r.status).toBe('error');
    expect(r.reason).toBe(
      `Styx's AMQP path lacks what this case needs (Styx has it through the SDK): ${why}`,
    );
  });
});
