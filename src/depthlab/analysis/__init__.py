"""Statistics across seeds, row selection from fit tables, table writing and plotting style."""
