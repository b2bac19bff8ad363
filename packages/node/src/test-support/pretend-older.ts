/**
 * Testing only: `STYX_TEST_PRETEND_OLDER=1` makes a clustered node pretend to run the build one
 * cluster protocol version older, to test rolling upgrades without an old build at hand. The node
 * announces `CLUSTER_PROTOCOL_VERSION - 1` in its hello, supports only that version's feature flags
 * (it lacks the newest), and refuses the messages of the flags it lacks as an older build would:
 * it registers no handler for them, so they are answered as unknown. A cluster it forms starts with
 * only its own flags enabled. Never set it outside tests. Read once; any value but '1' (or unset)
 * makes the node refuse to start.
 */
export const PRETEND_OLDER_ENV = 'STYX_TEST_PRETEND_OLDER';

/** Whether the knob is on; throws `RangeError` for a value other than '1' or empty. */
export function parsePretendOlder(text: string | undefined): boolean {
  if (text === undefined || text === '') return false;
  if (text === '1') return true;
  throw new RangeError(`${PRETEND_OLDER_ENV} must be 1 (or unset), not ${JSON.stringify(text)}`);
}

/** This process's setting, from its environment: the value, or why it is refused. */
export const pretendOlder: { readonly on: boolean; readonly error: string | undefined } = (() => {
  try {
    return { on: parsePretendOlder(process.env[PRETEND_OLDER_ENV]), error: undefined };
  } catch (error) {
    return { on: false, error: (error as Error).message };
  }
})();
