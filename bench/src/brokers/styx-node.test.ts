import { describe, expect, it } from 'vitest';
import { managementPortOf } from './styx-node.ts';

describe('managementPortOf', () => {
  it('reads the port --management-port gives (the last one, as the server takes it)', () => {
    expect(managementPortOf(['--port', '0', '--management-port', '15672'])).toBe(15672);
    expect(managementPortOf(['--management-port', '1', '--management-port', '2'])).toBe(2);
  });

  it('has none when the flag is absent, 0 (the API off), or not a port', () => {
    expect(managementPortOf(['--port', '0'])).toBeUndefined();
    expect(managementPortOf(['--management-port', '0'])).toBeUndefined();
    expect(managementPortOf(['--management-port', 'x'])).toBeUndefined();
    expect(managementPortOf(['--management-port'])).toBeUndefined();
  });
});
