// Stands in for the `uuid` package, which amqplib's rpc_client.js example requires for its
// correlation ids and which is not installed here: v4() is a random (version 4) UUID either way.
export { randomUUID as v4 } from 'node:crypto';
