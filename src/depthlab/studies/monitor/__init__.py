"""The monitor study, of the note "In a pre-norm stack, how does the residual stream's scale
change with depth?". Its question: how fast does the stream's scale grow with depth when each
block adds a fixed-size update, and what do the final norm and Post-LN change? (its targets,
fit, tables and figures)"""
