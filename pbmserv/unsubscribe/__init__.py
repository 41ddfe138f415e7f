"""Unsubscribing by the address or the web link a list mail carries, in one package.

Its modules sit in the layers of the mail's flow, each where its work belongs (the
import contracts in pyproject.toml hold each to its layer):

- ``changes``: what an unsubscribe tag stops, and stopping it (service level).
- ``notices``: the mail that says what an unsubscribe did (notifications level).
- ``by_mail``: a mail to an unsubscribe address (processing level).
- ``web``: the unsubscribe page, ``GET``/``POST /unsubscribe/TAG`` (web level).

This file imports none of them.
"""
