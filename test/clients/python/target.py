"""Connection parameters from broker URLs, the way an application would build them with pika.

Every program here takes one or more AMQP URLs (amqp:// or amqps://) and, for amqps, the CA file
that signed the broker's certificate. Nothing in this directory knows which broker it talks to.
"""
import argparse
import ssl

import pika


def arguments(description):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument('--url', action='append', required=True,
                        help='broker URL; repeat it for a retry list, tried in order')
    parser.add_argument('--ca', help='CA certificate (PEM) to verify an amqps:// broker with')
    return parser


def parameters(urls, ca=None):
    """One pika.ConnectionParameters per URL; amqps:// ones verify the broker against `ca`."""
    result = []
    for url in urls:
        params = pika.URLParameters(url)
        if url.startswith('amqps://'):
            context = ssl.create_default_context(cafile=ca)
            params.ssl_options = pika.SSLOptions(context, params.host)
        result.append(params)
    return result


def connect_first(params_list):
    """Connects to the first URL that answers, in list order; returns (connection, its parameters)."""
    errors = []
    for params in params_list:
        try:
            return pika.BlockingConnection(params), params
        except pika.exceptions.AMQPConnectionError as error:
            errors.append(f'{params.host}:{params.port}: {error!r}')
    raise pika.exceptions.AMQPConnectionError('no broker answered: ' + '; '.join(errors))
