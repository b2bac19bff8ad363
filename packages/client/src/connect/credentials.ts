// amqplib's `credentials` export. Styx authenticates with a username and password in Hello; the
// mechanism names are kept so code that builds credentials for amqplib works unchanged.

/** Credentials as amqplib builds them. `response()` is the SASL response amqplib would send. */
export interface Credentials {
  mechanism: string;
  response(): Uint8Array;
  username?: string;
  password?: string;
}

const utf8 = new TextEncoder();

/** amqplib's credentials factories. */
export const credentials = {
  /** SASL PLAIN: username and password. */
  plain(username: string, password: string): Credentials {
    return {
      mechanism: 'PLAIN',
      response: () => utf8.encode(`\u0000${username}\u0000${password}`),
      username,
      password,
    };
  },
  /** AMQPLAIN: the same username and password, as amqplib's second password mechanism. */
  amqplain(username: string, password: string): Credentials {
    return {
      mechanism: 'AMQPLAIN',
      response: () => utf8.encode(`\u0000${username}\u0000${password}`),
      username,
      password,
    };
  },
  /**
   * EXTERNAL: identity from the transport. Styx has no TLS client-certificate login yet, so this
   * sends an empty username and the server decides (it refuses unless configured otherwise).
   */
  external(): Credentials {
    return { mechanism: 'EXTERNAL', response: () => new Uint8Array(0) };
  },
};
