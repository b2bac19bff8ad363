"""Publishes messages with publisher confirms, then consumes and acknowledges each one.

Prints one JSON line per event: {"confirmed": i}, {"received": body, "redelivered": bool}, {"done": n}.
"""
import json

import pika

from target import arguments, parameters


def main():
    parser = arguments(__doc__)
    parser.add_argument('--queue', required=True)
    parser.add_argument('--count', type=int, default=10)
    args = parser.parse_args()
    connection = pika.BlockingConnection(parameters(args.url, args.ca))
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare(queue=args.queue, durable=True)
    for i in range(args.count):
        # With confirms on, basic_publish waits for the broker's ack and raises on a nack
        # (NackError) or, being mandatory, on an unroutable message (UnroutableError).
        channel.basic_publish('', args.queue, f'message {i}'.encode(),
                              pika.BasicProperties(delivery_mode=2, message_id=str(i)),
                              mandatory=True)
        print(json.dumps({'confirmed': i}), flush=True)
    received = 0
    for method, properties, body in channel.consume(args.queue, inactivity_timeout=10):
        if method is None:
            raise SystemExit(f'only {received} of {args.count} messages arrived within 10 s')
        channel.basic_ack(method.delivery_tag)
        print(json.dumps({'received': body.decode(), 'message_id': properties.message_id,
                          'redelivered': method.redelivered}), flush=True)
        received += 1
        if received == args.count:
            break
    channel.cancel()
    connection.close()
    print(json.dumps({'done': received}), flush=True)


if __name__ == '__main__':
    main()
