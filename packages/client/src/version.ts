/** This SDK's version, sent to the server in Hello's client properties (kept equal to package.json by a test). */
export const SDK_VERSION = '0.1.0';

/** The product name sent in Hello's client properties. */
export const SDK_PRODUCT = 'styx-client';
