"""Examples of depthlab used from your own code: examples/encoder_block.py, an own block."""
