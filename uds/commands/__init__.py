"""The command modules of `uds <command>`: one module per command, each exposing `register(subparsers)`.

They sit above every library package (nothing imports them but `uds.cli`, which imports only the
one being run, so `uds score` never loads the metrics stack).
"""
