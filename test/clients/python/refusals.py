"""What an application sees when the broker refuses: each mistake on a fresh connection, printed
as one JSON line {"case": ..., "error": exception class, "code": reply code, "text": reply text}.
"""
import json
import re

import pika

from target import arguments, parameters


def attempt(case, params, action):
    try:
        connection = pika.BlockingConnection(params)
        action(connection.channel())
        outcome = {'error': None}
    except pika.exceptions.ProbableAuthenticationError as error:
        # pika reports it as text: "ConnectionClosedByBroker: (403) 'ACCESS_REFUSED - ...'".
        found = re.search(r"\((\d+)\) ['\"](.*)['\"]$", str(error))
        outcome = {'error': type(error).__name__, 'code': int(found[1]), 'text': found[2]}
    except (pika.exceptions.ChannelClosedByBroker, pika.exceptions.ConnectionClosedByBroker) as error:
        outcome = {'error': type(error).__name__, 'code': error.reply_code, 'text': error.reply_text}
    print(json.dumps({'case': case, **outcome}), flush=True)


def main():
    parser = arguments(__doc__)
    parser.add_argument('--prefix', required=True)
    args = parser.parse_args()
    [params] = parameters(args.url, args.ca)
    queue = f'{args.prefix}.q'

    def publish_to_missing(channel):
        channel.confirm_delivery()
        channel.basic_publish(f'{args.prefix}.no-such-exchange', 'k', b'x')

    def redeclare_differently(channel):
        channel.queue_declare(queue, durable=True)
        channel.queue_declare(queue, durable=False)

    def ack_unknown_tag(channel):
        channel.basic_ack(99)
        channel.queue_declare(queue, durable=True)  # a round trip, for the close to arrive

    attempt('passive declare of a missing queue', params,
            lambda channel: channel.queue_declare(f'{args.prefix}.missing', passive=True))
    attempt('publish to a missing exchange', params, publish_to_missing)
    attempt('redeclare with other flags', params, redeclare_differently)
    attempt('ack of an unknown delivery tag', params, ack_unknown_tag)
    wrong = pika.URLParameters(args.url[0].replace('guest:guest@', 'guest:wrong@'))
    if args.ca is not None:
        wrong.ssl_options = params.ssl_options
    attempt('wrong password', wrong, lambda channel: None)


if __name__ == '__main__':
    main()
