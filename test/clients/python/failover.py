"""At-least-once publishing across a cluster: publishes --count messages with confirms, one at a
time, through the first node of the --url list that answers; when the connection is lost it
connects again down the list and republishes what was not confirmed. Then it consumes the queue
(through whichever node it is on) until every confirmed message is back.

Prints JSON lines: {"connected": "host:port"}, {"confirmed": i}, {"lost": reason},
{"received": i}, and {"done": n, "duplicates": d}.
"""
import json
import time

import pika

from target import arguments, connect_first, parameters

LOST = (pika.exceptions.AMQPConnectionError, pika.exceptions.AMQPChannelError,
        pika.exceptions.StreamLostError, pika.exceptions.ConnectionClosed)


def session(params_list, queue):
    connection, params = connect_first(params_list)
    print(json.dumps({'connected': f'{params.host}:{params.port}'}), flush=True)
    channel = connection.channel()
    channel.confirm_delivery()
    channel.queue_declare(queue=queue, durable=True)
    return connection, channel


def main():
    parser = arguments(__doc__)
    parser.add_argument('--queue', required=True)
    parser.add_argument('--count', type=int, default=100)
    parser.add_argument('--pause', type=float, default=0.05, help='seconds between publishes')
    parser.add_argument('--deadline', type=float, default=60, help='give up after this many seconds')
    args = parser.parse_args()
    params_list = parameters(args.url, args.ca)
    give_up = time.monotonic() + args.deadline
    connection, channel = None, None
    i = 0
    while i < args.count:
        if time.monotonic() > give_up:
            raise SystemExit(f'only {i} of {args.count} confirmed before the deadline')
        try:
            if channel is None:
                connection, channel = session(params_list, args.queue)
            channel.basic_publish('', args.queue, str(i).encode(),
                                  pika.BasicProperties(delivery_mode=2), mandatory=True)
            print(json.dumps({'confirmed': i}), flush=True)
            i += 1
            time.sleep(args.pause)
        except LOST as error:
            print(json.dumps({'lost': repr(error)}), flush=True)
            connection, channel = None, None
            time.sleep(0.5)
    seen = set()
    duplicates = 0
    while len(seen) < args.count:
        if time.monotonic() > give_up:
            raise SystemExit(f'only {len(seen)} of {args.count} came back before the deadline')
        try:
            if channel is None:
                connection, channel = session(params_list, args.queue)
            for method, _, body in channel.consume(args.queue, inactivity_timeout=10):
                if method is None:
                    raise SystemExit(f'only {len(seen)} of {args.count} came back; the queue is idle')
                number = int(body)
                if number in seen:
                    duplicates += 1
                else:
                    seen.add(number)
                    print(json.dumps({'received': number}), flush=True)
                channel.basic_ack(method.delivery_tag)
                if len(seen) == args.count:
                    break
        except LOST as error:
            print(json.dumps({'lost': repr(error)}), flush=True)
            connection, channel = None, None
            time.sleep(0.5)
    channel.cancel()
    connection.close()
    print(json.dumps({'done': len(seen), 'duplicates': duplicates}), flush=True)


if __name__ == '__main__':
    main()
