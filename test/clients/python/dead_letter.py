"""Dead-lettering as an application sees it: a queue with a dead-letter exchange, one message
rejected by its consumer and one that expires (per-message TTL); both read back from the
dead-letter queue with their x-death headers.

Prints JSON lines: {"confirmed": ...} per publish, then {"dead": body, "headers": {...},
"routing_key": ..., "exchange": ...} per dead-lettered message, then {"done": 2}.
"""
import datetime
import json

import pika

from target import arguments, parameters


def plain(value):
    """Header values as JSON: timestamps as ISO text, byte strings as text."""
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode()
    raise TypeError(repr(value))


def main():
    parser = arguments(__doc__)
    parser.add_argument('--prefix', required=True, help='names of the exchanges and queues start with it')
    args = parser.parse_args()
    work_exchange, dlx = f'{args.prefix}.work', f'{args.prefix}.dlx'
    work_queue, dead_queue = f'{args.prefix}.orders', f'{args.prefix}.dead'
    connection = pika.BlockingConnection(parameters(args.url, args.ca))
    channel = connection.channel()
    channel.confirm_delivery()
    channel.exchange_declare(work_exchange, 'topic', durable=True)
    channel.exchange_declare(dlx, 'topic', durable=True)
    channel.queue_declare(dead_queue, durable=True)
    channel.queue_bind(dead_queue, dlx, '#')
    channel.queue_declare(work_queue, durable=True, arguments={
        'x-dead-letter-exchange': dlx,
        'x-dead-letter-routing-key': 'dead.order',
    })
    channel.queue_bind(work_queue, work_exchange, 'order.*')

    channel.basic_publish(work_exchange, 'order.created', b'reject me',
                          pika.BasicProperties(delivery_mode=2), mandatory=True)
    print(json.dumps({'confirmed': 'reject me'}), flush=True)
    method, _, body = channel.basic_get(work_queue)
    if method is None:
        raise SystemExit(f'{work_queue} was empty after a confirmed publish')
    channel.basic_reject(method.delivery_tag, requeue=False)

    channel.basic_publish(work_exchange, 'order.expired', b'let me expire',
                          pika.BasicProperties(delivery_mode=2, expiration='50'), mandatory=True)
    print(json.dumps({'confirmed': 'let me expire'}), flush=True)

    dead = 0
    for method, properties, body in channel.consume(dead_queue, inactivity_timeout=10):
        if method is None:
            raise SystemExit(f'only {dead} of 2 dead letters arrived within 10 s')
        channel.basic_ack(method.delivery_tag)
        print(json.dumps({'dead': body.decode(), 'exchange': method.exchange,
                          'routing_key': method.routing_key,
                          'expiration': properties.expiration,
                          'headers': properties.headers}, default=plain), flush=True)
        dead += 1
        if dead == 2:
            break
    channel.cancel()
    connection.close()
    print(json.dumps({'done': dead}), flush=True)


if __name__ == '__main__':
    main()
