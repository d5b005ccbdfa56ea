"""The offline demo (``caveat demo``): bundled sample pages served on 127.0.0.1, crawled, audited and served.
May use: every workflow and domain; used only by the CLI.
"""
