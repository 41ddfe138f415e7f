"""Bounces, in one package: mail of ours that did not reach its address.

Its modules sit in the layers of the mail's flow, each where its work belongs (the
import contracts in pyproject.toml hold each to its layer):

- ``reading``: what a bounce says (which addresses failed, how, which of our mails
  it returns); a mail utility, read while a mail is parsed (pbmserv.mail.parse).
- ``scoring``: bounces counted per address, suspension and resumption, the lists and
  counts the administrator sees (service level).
- ``notices``: who is told when an address stops being mailed (notifications level).
- ``handling``: a bounce that came back to us, read and counted (processing level);
  the sender counts the relay's refusals itself (pbmserv.sender.refusals).
- ``cli``: ``pbmserv users bounces`` and ``users clear-bounces``.

This file imports none of them: reading a bounce pulls in no database.
"""
