"""The theory096 study, of the note "THEORY-096: A Pre-LN residual stream's per-layer change
decays as one over root k, so deep blocks cannot refine the representation" (after Xie et
al. 2023, sec. 3.2). Its question: does the normalised stream's change per block, omega_k,
decay as 1/sqrt(k), and under which premise (V_k = k sigma^2)? (its targets, fit, tables and
figures)"""
