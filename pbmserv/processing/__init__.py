"""Processing stored mail: batches of parsed mail (batches), each mail's commands and
replies (mail)."""

from pbmserv.processing.batches import process_message, process_pending

__all__ = ["process_message", "process_pending"]
