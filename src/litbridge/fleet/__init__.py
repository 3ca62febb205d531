"""Fleet mode: daemons on several machines joined through a NATS server (JetStream stream + KV registry).

`subjects` names everything (one place), `config` turns the URL/credentials/TLS options into
`nats.connect` arguments, `daemon` is the daemon side (publisher, command responder, registry heartbeat)
and `client` the `Fleet` class. Needs the optional extra `fleet`: nats-py (from a checkout: pip install '.[fleet]').
"""
