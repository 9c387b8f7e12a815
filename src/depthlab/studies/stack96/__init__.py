"""The stack96 study, of the note "What breaks when you stack 96 blocks". Its question: how do
Post-LN, Pre-LN and a stack without residual path distribute the gradient over their blocks,
and how does the stream grow, from 6 to 96 blocks at initialisation? (its targets, fit,
tables and figures)"""
