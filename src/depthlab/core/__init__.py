"""The model, placements at work, probes, measurement, training, corpus, records and I/O."""
