"""The varsplit study, of the note "varsplit: a Pre-LN transformer's residual-stream variance
grows with depth as a stationary MLP term plus a rising attention term". Its question: where
does the variance a Pre-LN stream gains at each layer come from, attention or the MLP, and can
one depth-uniform residual scale keep the two balanced? (its targets, fit, tables and
figures)"""
